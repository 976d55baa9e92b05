//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

mod conformance;
mod memory;

mod macro_backstop;
mod macro_basic;
mod macro_concurrency;
mod macro_fence;
mod macro_support;
mod ui;
