//! The producer's half: one row in the outbox table, written in the caller's
//! business transaction.

use super::MessageId;
use super::sql::text as outbox_sql;
use crate::db::caller_tx::tx_error;
use crate::db::{Arg, Dialect, SqlConn, SqlDialect as _};
use crate::error::Error;
use crate::observe::TraceContext;
use crate::observe::messaging::MsgSpan;

/// Longest namespace, topic and business id (the MySQL columns' widths).
const MAX_NAMESPACE: usize = 255;
const MAX_TOPIC: usize = 255;
const MAX_BUSINESS_ID: usize = 512;

/// Where messages are enqueued and how: the table (default `idem_outbox`), the
/// namespace mixed into message ids (two services sharing a broker give
/// theirs different namespaces), and whether messages about one business id
/// must be published in the order they were enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxTable<'a> {
    /// The table; checked on use.
    pub table: &'a str,
    /// Mixed into every message id and part of the row's uniqueness, with
    /// the topic and the business id: two services sharing one table under
    /// different namespaces never collide (default empty).
    pub namespace: &'a str,
    /// Publish messages about one business id (in this namespace) in the
    /// order their transactions committed, which is also their enqueue
    /// order. An ordered enqueue waits while another open transaction holds
    /// an ordered enqueue of the same business id (PostgreSQL: a
    /// transaction-scoped advisory lock; MySQL/MariaDB: a row of the outbox's
    /// lock table; SQLite writers are serial), so a later transaction's
    /// message always comes later; the relay publishes one only after every
    /// earlier pending one of that business id (in any topic) was sent or
    /// parked. Unordered enqueues take no lock. Default off.
    pub ordered: bool,
}

impl Default for OutboxTable<'_> {
    fn default() -> Self {
        OutboxTable {
            table: outbox_sql::DEFAULT_OUTBOX_TABLE,
            namespace: "",
            ordered: false,
        }
    }
}

/// The default outbox (`idem_outbox`, no namespace, unordered); see
/// [`OutboxTable`] for the others.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outbox;

impl Outbox {
    /// Enqueues `payload` about `business_id` on `topic` in `conn` (the
    /// caller's business transaction) in the default outbox; see
    /// [`OutboxTable::enqueue`].
    pub async fn enqueue<C>(
        conn: &mut C,
        topic: &str,
        business_id: &str,
        payload: &[u8],
    ) -> Result<MessageId, Error>
    where
        C: SqlConn + ?Sized,
    {
        OutboxTable::default()
            .enqueue(conn, topic, business_id, payload)
            .await
    }
}

impl OutboxTable<'_> {
    /// The same table, ordered per business id.
    pub fn ordered(self, on: bool) -> Self {
        OutboxTable {
            ordered: on,
            ..self
        }
    }

    /// The message id `enqueue` returns for (topic, business id).
    pub fn message_id(&self, topic: &str, business_id: &str) -> MessageId {
        MessageId::derive(self.namespace, topic, business_id)
    }

    /// Writes the message into `conn` (the caller's business transaction, or
    /// the transaction an `#[idempotent(tx = ...)]` or `#[state_transition]`
    /// body runs in) and returns its id. The row commits or rolls back with the
    /// caller's transaction.
    ///
    /// A message about (topic, business id) that already exists, committed by
    /// an earlier attempt of the same business transaction, is left alone and
    /// its id returned, provided it holds the same payload; another payload is
    /// `Error::PayloadMismatch`. A concurrent transaction enqueuing the same
    /// pair waits on the unique key until the first one ends.
    ///
    /// The row keeps the W3C trace context of the message's creation
    /// ([`TraceContext::current`]: with the `otel` feature the `create` span
    /// this call opens, else the context the task set with
    /// [`TraceContext::scope`]), which the relay sends along as headers. An
    /// existing row keeps its first context.
    pub async fn enqueue<C>(
        &self,
        conn: &mut C,
        topic: &str,
        business_id: &str,
        payload: &[u8],
    ) -> Result<MessageId, Error>
    where
        C: SqlConn + ?Sized,
    {
        outbox_sql::check_outbox_table(self.table)
            .map_err(|e| Error::Config(format!("outbox: {e}")))?;
        let id = self.message_id(topic, business_id);
        let span = MsgSpan::create(topic, id.as_str());
        span.run(self.write(conn, id, topic, business_id, payload))
            .await
    }

    /// The enqueue's statements, inside its `create` span.
    async fn write<C>(
        &self,
        conn: &mut C,
        id: MessageId,
        topic: &str,
        business_id: &str,
        payload: &[u8],
    ) -> Result<MessageId, Error>
    where
        C: SqlConn + ?Sized,
    {
        check_part(&id, "namespace", self.namespace, MAX_NAMESPACE, true)?;
        check_part(&id, "topic", topic, MAX_TOPIC, false)?;
        check_part(&id, "business id", business_id, MAX_BUSINESS_ID, false)?;
        let d = C::Db::DIALECT;
        let fail = |e: sqlx::Error| tx_error(id.as_str(), e);
        if self.ordered {
            self.lock_order(conn, business_id).await.map_err(fail)?;
        }
        let order = self.ordered.then_some(business_id);
        let trace = TraceContext::current();
        let args = [
            Arg::Text(self.namespace),
            Arg::Text(id.as_str()),
            Arg::Text(topic),
            Arg::Text(business_id),
            Arg::OptText(order),
            Arg::Bytes(payload),
            Arg::OptText(trace.as_ref().map(TraceContext::traceparent)),
            Arg::OptText(trace.as_ref().and_then(TraceContext::tracestate)),
        ];
        let rows = conn
            .any()
            .execute(&outbox_sql::insert(d, self.table, self.table), &args)
            .await
            .map_err(fail)?;
        // MySQL counts a found duplicate as a changed row (CLIENT_FOUND_ROWS):
        // it always reads back.
        if rows == 1 && d != Dialect::MySql {
            return Ok(id);
        }
        let same = conn
            .any()
            .ints(
                &outbox_sql::same_payload(d, self.table),
                &[
                    Arg::Bytes(payload),
                    Arg::Text(self.namespace),
                    Arg::Text(topic),
                    Arg::Text(business_id),
                ],
            )
            .await
            .map_err(fail)?;
        match same.as_deref() {
            Some([1]) => Ok(id),
            Some(_) => Err(Error::PayloadMismatch {
                key: id.to_string(),
                stored: "another payload".into(),
                given: blake3::hash(payload).to_hex()[..16].to_owned(),
            }),
            None => Err(Error::Database {
                key: id.to_string(),
                detail: format!(
                    "the outbox row of `{topic}`/`{business_id}` vanished between the insert and its read"
                ),
            }),
        }
    }
}

impl OutboxTable<'_> {
    /// Waits until no other open transaction is enqueuing for this ordered
    /// business id, and holds it until this transaction ends (see the
    /// `ordered` field).
    async fn lock_order<C>(&self, conn: &mut C, business_id: &str) -> Result<(), sqlx::Error>
    where
        C: SqlConn + ?Sized,
    {
        let d = C::Db::DIALECT;
        let Some(sql) = outbox_sql::order_lock(d, self.table) else {
            return Ok(());
        };
        if d == Dialect::Postgres {
            let key = self.order_lock_key(business_id);
            conn.any().execute(&sql, &[Arg::Int(key)]).await?;
        } else {
            let args = [Arg::Text(self.namespace), Arg::Text(business_id)];
            conn.any().execute(&sql, &args).await?;
        }
        Ok(())
    }

    /// PostgreSQL's advisory lock key of an ordered business id: 64 bits of
    /// blake3 over the table, the namespace and the business id. Two ids
    /// sharing a key only wait for each other.
    fn order_lock_key(&self, business_id: &str) -> i64 {
        let mut h = blake3::Hasher::new();
        for part in [self.table, self.namespace, business_id] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let b = h.finalize();
        let mut k = [0; 8];
        k.copy_from_slice(&b.as_bytes()[..8]);
        i64::from_le_bytes(k)
    }
}

/// A namespace, topic or business id the table can hold: not too long, not
/// empty (unless `may_be_empty`), no NUL.
fn check_part(
    id: &MessageId,
    what: &str,
    v: &str,
    max: usize,
    may_be_empty: bool,
) -> Result<(), Error> {
    let reason = if v.is_empty() && !may_be_empty {
        format!("an empty {what}")
    } else if v.len() > max {
        format!("a {what} of {} bytes (at most {max})", v.len())
    } else if v.contains('\0') {
        format!("a {what} containing NUL")
    } else {
        return Ok(());
    };
    Err(Error::InvalidKey {
        key: id.to_string(),
        reason,
    })
}
