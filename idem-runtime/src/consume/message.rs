//! One message as the consume log sees it ([`Message`]): the consumer, the
//! message id and, optionally, the message type and business id; rendered into
//! the log's two unique keys by the key builder. And where the log lives
//! ([`LogTable`]).

use std::time::Duration;

use crate::consume::sql::{DEFAULT_LOG_TABLE, check_log_table};
use crate::db::Dialect;
use crate::error::Error;
use crate::key::{Key, KeyPart};

/// How long a log row is kept by default before `purge_expired` may delete it:
/// longer than any broker keeps redelivering a message.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// Where the consume log lives and how long its rows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogTable<'a> {
    /// The table (`idem_consume_log`); checked on use.
    pub table: &'a str,
    /// Row retention (default 7 days).
    pub retention: Duration,
}

impl Default for LogTable<'_> {
    fn default() -> Self {
        LogTable {
            table: DEFAULT_LOG_TABLE,
            retention: DEFAULT_RETENTION,
        }
    }
}

impl LogTable<'_> {
    /// The insert for `dialect`, or `Error::Config` for a bad name or retention.
    pub(crate) fn insert(&self, dialect: Dialect) -> Result<String, Error> {
        self.check()?;
        // Unquoted, as `migrate()` creates it (a quoted name would be
        // case-sensitive on PostgreSQL); the check makes splicing safe.
        Ok(crate::consume::sql::insert(dialect, self.table))
    }

    /// `Error::Config` for a bad table name or a zero retention.
    pub(crate) fn check(&self) -> Result<(), Error> {
        check_log_table(self.table).map_err(|e| Error::Config(format!("consume log: {e}")))?;
        if self.retention.is_zero() {
            return Err(Error::Config("consume log: a zero retention".into()));
        }
        Ok(())
    }

    /// The retention as the microseconds the insert binds.
    pub(crate) fn retention_us(&self) -> i64 {
        crate::db::micros(self.retention)
    }
}

/// One message: who consumes it, its id, and what it is about.
#[derive(Clone, Copy)]
pub struct Message<'a> {
    /// The consumer (a service or handler name): the keys' scene, so two
    /// consumers of one message each process it once.
    pub consumer: &'a str,
    /// The broker's message id (AMQP `message_id`, `Nats-Msg-Id`) or one taken
    /// from the payload.
    pub id: &'a (dyn KeyPart + Sync),
    /// The message type and business id (`("refund", &order_no)`): a second
    /// message of this type about the same business id is a duplicate even
    /// under a new message id; another type about it is not.
    pub business: Option<(&'a str, &'a (dyn KeyPart + Sync))>,
}

impl std::fmt::Debug for Message<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("msg_key", &self.keys("").0.as_str())
            .finish_non_exhaustive()
    }
}

impl Message<'_> {
    /// The log's keys under `namespace`: `ns:consumer:<id>` and
    /// `ns:consumer:<type>:<business id>`.
    pub(crate) fn keys(&self, namespace: &str) -> (Key, Option<Key>) {
        let msg = Key::from_parts(namespace, self.consumer, &[self.id]);
        let biz = self
            .business
            .map(|(ty, id)| Key::from_parts(namespace, self.consumer, &[&ty, id]));
        (msg, biz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_consumers_and_types() {
        let m = Message {
            consumer: "refund",
            id: &"m:1",
            business: Some(("refund", &"o-1")),
        };
        let (msg, biz) = m.keys("shop");
        assert_eq!(msg.as_str(), "shop:refund:m%3A1");
        assert_eq!(biz.unwrap().as_str(), "shop:refund:refund:o-1");
        assert!(check_log_table("idem_consume_log").is_ok());
        assert!(check_log_table("order").is_err());
        assert!(check_log_table(&"a".repeat(52)).is_err());
    }
}
