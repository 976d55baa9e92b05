//! One integration-test binary (fewer links); each module covers one area.

mod sql_backstop;
mod sql_layered;
mod sql_procs;
mod sql_store;
mod sql_support;
