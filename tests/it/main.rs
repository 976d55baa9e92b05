//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

mod conformance;
mod memory;
mod sql_backstop;
mod sql_conformance;
mod sql_layered;
mod sql_procs;
mod sql_store;
mod sql_support;
