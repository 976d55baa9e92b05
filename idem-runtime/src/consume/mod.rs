//! The consume log: at-least-once deliveries, effects exactly once.
//!
//! Brokers deliver at least once: a consumer that crashes after its commit and
//! before its acknowledgement gets the message again, and publishers retry.
//! The consume log is a table in the *business* database with one row per
//! consumed message, unique on the message id and on (consumer, message type,
//! business id). The row is inserted in the caller's transaction, under a
//! savepoint, *before* the body: the business rows and the log row commit or
//! roll back together, so
//!
//! - a redelivered message id, or the same business id re-published under a
//!   new id, finds the row and is [`Consumed::Duplicate`]: acknowledge and skip;
//! - a body error rolls back both (neither row stays): the redelivery retries;
//! - a crash after the commit leaves both: the redelivery is a duplicate;
//! - a crash before it leaves neither: the redelivery processes it.
//!
//! Acknowledge only after the commit (the broker adapters do).
//!
//! Compared with Apache Camel's idempotent consumer (the repository adds the
//! id eagerly, in its own store, and removes it on failure) the log cannot
//! disagree with the business rows: there is no window where the id is
//! recorded but the effect is not, or the reverse.
//!
//! # What breaks when the log is elsewhere
//! The guarantee needs the log row and the business rows in one transaction,
//! so in one database. With the log in another database (or in Redis), a crash
//! between the two commits either loses the message (log committed first,
//! effect never) or applies it twice (effect committed, log not). Where the
//! effect is in a system without transactions, write the effect's *intent* to
//! an outbox table in the log's database in the same transaction, and let a
//! relay deliver it idempotently.
//!
//! A Redis-only log is not enough either: Redis replication is asynchronous,
//! so a failover can drop the keys of messages whose effects already
//! committed, and the next redelivery applies them again; an eviction policy
//! or a `FLUSHALL` does the same. Use the guard's Redis store to keep load off
//! the database, never as the last word on "already consumed".
//!
//! - [`Consumed`], [`DuplicateOf`]: the outcome;
//! - [`Message`], [`LogTable`]: the message's identity, where the log lives;
//! - [`consume_once`]: the non-macro API (`#[idem::consume_once]` expands to the
//!   same `begin`/`finish`);
//! - `amqp` (feature `rabbitmq`) and `nats` (feature `nats`): consumer loops
//!   that acknowledge only after the handler's commit, over the shared
//!   `worker` pieces ([`ConsumerOptions`], [`Delivery`], [`shutdown`], the
//!   poison policy);
//! - `Batch` and `BatchHandler` (a broker feature and a SQL database): a
//!   batch of deliveries in one transaction, deduplicated by one statement,
//!   a failing record rolled back alone (`amqp::run_batch`,
//!   `nats::run_batch`).

mod outcome;
pub use outcome::{Consumed, DuplicateOf};

#[cfg(feature = "rabbitmq")]
pub mod amqp;
#[cfg(all(
    any(feature = "rabbitmq", feature = "nats"),
    any(feature = "postgres", feature = "mysql", feature = "sqlite")
))]
mod batch;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(all(
    any(feature = "rabbitmq", feature = "nats"),
    any(feature = "postgres", feature = "mysql", feature = "sqlite")
))]
pub use batch::{Batch, BatchHandler, MAX_BATCH, Record, RecordOutcome};
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod pump;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod worker;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub use worker::{
    ConsumerOptions, Counters, Delivery, PoisonHook, Poisoned, Shutdown, ShutdownSignal, shutdown,
};

#[cfg(feature = "sql")]
mod builder;
#[cfg(feature = "sql")]
mod message;
#[cfg(feature = "sql")]
pub(crate) mod run;

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) mod sql;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_ops;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tables;

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use builder::{ConsumeCall, consume_once};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use message::{DEFAULT_RETENTION, LogTable, Message};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use run::{LogEntry, Step};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use sql::{DEFAULT_LOG_TABLE, check_log_table};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use sql_ops::ConsumerRows;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) use tables::LOG_KEY;

/// The consume log's DDL for `table` (`CREATE … IF NOT EXISTS`, one string per
/// statement), for a business database that is not the idem store's: run it
/// there with your migration tool.
///
/// ```
/// use idem::consume::ddl;
/// use idem::db::Dialect;
/// let stmts = ddl(Dialect::Postgres, "refund_log").unwrap();
/// assert!(stmts[0].starts_with("CREATE TABLE IF NOT EXISTS refund_log"));
/// ```
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub fn ddl(dialect: crate::db::Dialect, table: &str) -> Result<Vec<String>, crate::error::Error> {
    check_log_table(table).map_err(crate::error::Error::Config)?;
    Ok(sql::log_ddl(dialect, table, table))
}
