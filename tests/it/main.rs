//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

mod conformance;
mod memory;
mod sim;
