//! The integration tests, in one binary to keep link times down.

mod macro_backstop;
mod macro_basic;
mod macro_concurrency;
mod macro_fence;
mod macro_support;
mod ui;
