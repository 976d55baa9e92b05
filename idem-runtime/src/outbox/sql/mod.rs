//! The outbox's SQL: its table set (`tables.rs`: name, DDL, migration steps,
//! purge, probes), the DDL (`ddl.rs`), the statement texts of the enqueue and
//! the relay (`text.rs`), the relay's driver calls on a [`SqlStore`]
//! (`claim.rs`, `store.rs`, and PostgreSQL's pipelined batches in `pg.rs`),
//! and the operators' reads (`ops.rs`, text in `ops_text.rs`).
//!
//! [`SqlStore`]: crate::store::sql::SqlStore

#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub(crate) mod claim;
mod ddl;
mod ops;
mod ops_text;
#[cfg(all(feature = "postgres", any(feature = "rabbitmq", feature = "nats")))]
mod pg;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub(crate) mod store;
mod tables;
pub(crate) mod text;

pub use ops::{OutboxState, OutboxTopic, ParkedMessage, Unpark};

/// The store's outbox table, schema-qualified on PostgreSQL.
fn table(store: &crate::store::sql::SqlStore) -> String {
    store.names.outbox_q(store.dialect)
}
