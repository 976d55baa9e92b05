//! The statements sqlx sends on this thread, read from its own statement log
//! (one `sqlx::query` event per statement): what a technique sends inside the
//! caller's transaction, where no store counter reaches. Only on a
//! current-thread runtime, and only PostgreSQL and MariaDB: SQLite runs its
//! statements on a worker thread of its own.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::DefaultGuard;
use tracing::{Event, Metadata, Subscriber};

/// Collects the first word of each statement (`SAVEPOINT`, `INSERT`, `ROLLBACK`, ..).
#[derive(Clone, Default)]
pub(crate) struct SqlLog {
    seen: Arc<Mutex<Vec<String>>>,
}

impl SqlLog {
    /// Starts collecting on this thread until the guard is dropped.
    pub(crate) fn start() -> (SqlLog, DefaultGuard) {
        let log = SqlLog::default();
        let guard = crate::support::capture::capture(log.clone());
        (log, guard)
    }

    /// The statements since the last `take`, by first word.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

struct Summary(Option<String>);

impl Visit for Summary {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        if f.name() == "summary" {
            self.0 = Some(format!("{v:?}").trim_matches('"').to_owned());
        }
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        if f.name() == "summary" {
            self.0 = Some(v.to_owned());
        }
    }
}

impl Subscriber for SqlLog {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target() == "sqlx::query"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        if e.metadata().target() != "sqlx::query" {
            return;
        }
        let mut s = Summary(None);
        e.record(&mut s);
        let word =
            s.0.and_then(|s| s.split_whitespace().next().map(str::to_uppercase))
                .unwrap_or_else(|| "?".into());
        self.seen.lock().unwrap().push(word);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
