//! Batched consume-once: a unit of deliveries through the consume log in one
//! transaction of the caller's database.
//!
//! - one statement per batch inserts the log rows of every new message and
//!   names them, so the batch's message ids and business ids are deduplicated
//!   at once (two records of one id in a batch: the later one waits for the
//!   earlier one's outcome, in the same transaction);
//! - the new records' bodies run in that transaction without savepoints;
//!   when one fails, the transaction is rolled back and run again without it,
//!   each body then in its own savepoint, so a failing record is rolled back
//!   alone (its log row too) while the others commit;
//! - the loop acknowledges only after the commit; a failed record goes back
//!   to the broker, or is poison after its last attempt, exactly as a
//!   handler's error does in the loop per message.
//!
//! [`Batch`] holds the pool, the [`BatchHandler`] and the batch's settings;
//! `amqp::run_batch` and `nats::run_batch` run it over a broker, and
//! [`Batch::consume`] runs one batch of deliveries by hand.

mod dedupe;
mod run;

use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

use super::message::DEFAULT_RETENTION;
use super::pump::Process;
use super::worker::{ConsumerOptions, Delivery, Verdict, decide, received};
use crate::consume::sql::DEFAULT_LOG_TABLE;
use crate::db::SqlDb;
use crate::handle::Idem;

/// Largest batch: the statements bind two values per record.
pub const MAX_BATCH: usize = 10_000;

/// What a batched consumer does with its messages: read each delivery, then
/// apply each new message in the batch's transaction.
///
/// ```
/// # #[cfg(feature = "postgres")] mod doc {
/// use idem::consume::{BatchHandler, Delivery, Record};
///
/// struct Refunds;
///
/// impl BatchHandler for Refunds {
///     type Db = sqlx::Postgres;
///     type Msg = String; // the order number
///     type Error = String;
///
///     fn parse(&self, d: &Delivery) -> Result<Record<String>, String> {
///         let id = d.id.clone().ok_or("a message without an id")?;
///         let order_no = String::from_utf8(d.payload.clone()).map_err(|e| e.to_string())?;
///         Ok(Record::new(id, order_no.clone()).business("refund", order_no))
///     }
///
///     async fn handle(
///         &self,
///         tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
///         order_no: &String,
///     ) -> Result<(), String> {
///         sqlx::query("INSERT INTO refunds (order_no) VALUES ($1)")
///             .bind(order_no)
///             .execute(&mut **tx)
///             .await
///             .map(drop)
///             .map_err(|e| e.to_string())
///     }
/// }
/// # }
/// ```
pub trait BatchHandler: Send + Sync + 'static {
    /// The database of the log and the effects: `sqlx::Postgres`,
    /// `sqlx::MySql` (MySQL 8, MariaDB) or `sqlx::Sqlite`.
    type Db: SqlDb;
    /// A message as the handler reads it.
    type Msg: Send + Sync + 'static;
    /// The handler's error: shown in logs and to the poison hook.
    type Error: std::fmt::Display + Send + 'static;

    /// Reads a delivery: its message id (the broker's, or one from the
    /// payload), its business id if it has one, and the message. An error
    /// fails this delivery alone (retried, then poison), as a body's does.
    fn parse(&self, delivery: &Delivery) -> Result<Record<Self::Msg>, Self::Error>;

    /// Applies one new message in the batch's transaction. Do not commit or
    /// roll back: the batch does. An error rolls back this message's writes
    /// and its log row, and the message goes back to the broker.
    fn handle(
        &self,
        tx: &mut sqlx::Transaction<'static, Self::Db>,
        msg: &Self::Msg,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Called after each commit, before the batch's acknowledgements, with
    /// the messages the commit applied (duplicates excluded). A crash here
    /// redelivers the batch, whose messages the log then finds. Does nothing
    /// by default.
    fn after_commit(&self, applied: &[&Self::Msg]) {
        let _ = applied;
    }
}

/// A message with its identity in the consume log: the message id, and the
/// message type and business id (see [`Message`](super::Message)). Keys are
/// the same as the attribute's and the per-message API's for the same text,
/// so a consumer can move from one to the other without reprocessing.
#[derive(Debug, Clone)]
pub struct Record<M> {
    msg: M,
    id: String,
    business: Option<(Cow<'static, str>, String)>,
}

impl<M> Record<M> {
    /// A message with its message id.
    pub fn new(id: impl Into<String>, msg: M) -> Self {
        Record {
            msg,
            id: id.into(),
            business: None,
        }
    }

    /// The message type and business id: a second message of this type
    /// about the same business id is a duplicate under any message id.
    pub fn business(
        mut self,
        msg_type: impl Into<Cow<'static, str>>,
        id: impl Into<String>,
    ) -> Self {
        self.business = Some((msg_type.into(), id.into()));
        self
    }
}

/// How one delivery of a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordOutcome {
    /// New: its body ran and the batch committed. Acknowledge.
    Processed,
    /// The log already held its message id or business id, or an earlier
    /// record of the batch did. Acknowledge.
    Duplicate,
    /// Its parse or body failed, or the batch's transaction did: nothing of
    /// it was committed. Back to the broker (or poison).
    Failed(String),
}

/// A batched consumer: the pool of the database holding the consume log and
/// the effects, the handler, and the batch's settings.
pub struct Batch<H: BatchHandler> {
    pool: sqlx::Pool<H::Db>,
    handler: H,
    consumer: String,
    size: usize,
    linger: Duration,
    table: String,
    retention: Duration,
    handle: Option<Idem>,
}

impl<H: BatchHandler> std::fmt::Debug for Batch<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("consumer", &self.consumer)
            .field("size", &self.size)
            .field("linger", &self.linger)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl<H: BatchHandler> Batch<H> {
    /// A batched consumer named `consumer` (the log keys' scene, as the
    /// attribute's `consumer`): batches of up to 100, waiting up to 10 ms for
    /// a batch to fill, the default log table and retention.
    pub fn new(pool: sqlx::Pool<H::Db>, consumer: impl Into<String>, handler: H) -> Self {
        Batch {
            pool,
            handler,
            consumer: consumer.into(),
            size: 100,
            linger: Duration::from_millis(10),
            table: DEFAULT_LOG_TABLE.to_owned(),
            retention: DEFAULT_RETENTION,
            handle: None,
        }
    }

    /// Records per batch, from 1 to [`MAX_BATCH`] (clamped).
    pub fn size(mut self, n: usize) -> Self {
        self.size = n.clamp(1, MAX_BATCH);
        self
    }

    /// How long a batch waits for more deliveries once it has one (default
    /// 10 ms): a batch starts when it is full or when this has passed.
    pub fn linger(mut self, d: Duration) -> Self {
        self.linger = d;
        self
    }

    /// Another log table or retention (default `idem_consume_log`, 7 days);
    /// checked on use.
    pub fn log(mut self, log: super::LogTable<'_>) -> Self {
        self.table = log.table.to_owned();
        self.retention = log.retention;
        self
    }

    /// Counts the records in this handle's stats and renders keys under its
    /// namespace (default: the installed global's).
    pub fn handle(mut self, idem: Idem) -> Self {
        self.handle = Some(idem);
        self
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// Runs one batch: parses each delivery, deduplicates the batch against
    /// the log, applies the new messages in one transaction and commits. One
    /// outcome per delivery, in order; acknowledge the `Processed` and
    /// `Duplicate` ones (after this returns: it has committed).
    pub async fn consume(&self, deliveries: &[Delivery]) -> Vec<RecordOutcome> {
        run::consume(self, deliveries).await
    }
}

impl<H: BatchHandler> Process for Batch<H> {
    fn size(&self) -> usize {
        self.size
    }

    fn linger(&self) -> Duration {
        self.linger
    }

    async fn process(&self, opts: &ConsumerOptions, unit: Vec<Delivery>) -> Vec<Verdict> {
        for d in &unit {
            received(opts, d);
        }
        let outcomes = self.consume(&unit).await;
        unit.iter()
            .zip(outcomes)
            .map(|(d, o)| {
                let out = match o {
                    RecordOutcome::Failed(e) => Err(e),
                    _ => Ok(()),
                };
                decide(opts, d.attempt, out, || Some(d.clone()))
            })
            .collect()
    }
}
