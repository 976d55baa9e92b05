//! The integration tests, in one binary to keep link times down.

mod macro_basic;
mod macro_support;
