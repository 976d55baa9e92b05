//! The SQL store family (PostgreSQL, MariaDB, SQLite): store, builder, backstops, procedures.

pub mod backstop;
pub mod backstop_names;
pub mod backstop_text;
pub mod builder;
pub mod errors;
pub mod layered;
pub mod maintenance;
pub mod procs;
pub mod round_trips;
pub mod store;
