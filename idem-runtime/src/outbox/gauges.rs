//! The relay's metrics through the `metrics` facade (one table in
//! docs/outbox.md), labelled by outbox table and broker, never by message:
//!
//! - `idem_outbox_pending{outbox}` (gauge): messages not sent nor parked;
//! - `idem_outbox_oldest_seconds{outbox}` (gauge): age of the oldest of them;
//! - `idem_outbox_parked{outbox}` (gauge): parked messages in the table;
//! - `idem_outbox_lag_seconds{outbox}` (gauge): age of the oldest pending
//!   message that is due (not claimed, not waiting for a retry), 0 without
//!   one: what grows while no relay keeps up;
//! - `idem_outbox_published_total{outbox,broker}`: confirmed publishes;
//! - `idem_outbox_duplicates_total{outbox,broker}`: confirmed publishes the
//!   broker recognised as duplicates (NATS);
//! - `idem_outbox_retried_total{outbox,broker}`: refused publishes rescheduled;
//! - `idem_outbox_parked_total{outbox,broker}`: messages this relay parked.

use std::time::Duration;

use super::sql::store::OutboxCounts;
use crate::exec::Exec;
use crate::store::sql::SqlStore;

/// The label values of one relay.
#[derive(Debug, Clone)]
pub(super) struct Gauges {
    outbox: String,
    broker: &'static str,
}

impl Gauges {
    pub(super) fn new(outbox: &str, broker: &'static str) -> Self {
        Gauges {
            outbox: outbox.to_owned(),
            broker,
        }
    }

    pub(super) fn set(&self, c: OutboxCounts) {
        let o = self.outbox.clone();
        metrics::gauge!("idem_outbox_pending", "outbox" => o.clone()).set(c.pending as f64);
        metrics::gauge!("idem_outbox_oldest_seconds", "outbox" => o.clone())
            .set(c.oldest_us.max(0) as f64 / 1e6);
        metrics::gauge!("idem_outbox_parked", "outbox" => o).set(c.parked as f64);
    }

    /// Reads the lag (one statement through the execution layer, as the
    /// other gauges' read) and sets its gauge; a failure is logged.
    pub(super) async fn read_lag(&self, store: &SqlStore, exec: &Exec) {
        let r = exec
            .op(crate::observe::Op::OutboxStats, &self.outbox, || {
                Box::pin(store.outbox_lag())
            })
            .await;
        match r {
            Ok(lag) => self.lag(lag),
            Err(e) => tracing::debug!(error = %e, "idem: reading the outbox lag failed"),
        }
    }

    fn lag(&self, lag: Option<Duration>) {
        metrics::gauge!("idem_outbox_lag_seconds", "outbox" => self.outbox.clone())
            .set(lag.unwrap_or_default().as_secs_f64());
    }

    fn count(&self, name: &'static str, n: u64) {
        if n > 0 {
            metrics::counter!(name, "outbox" => self.outbox.clone(), "broker" => self.broker)
                .increment(n);
        }
    }

    pub(super) fn published(&self, n: u64, duplicates: u64) {
        self.count("idem_outbox_published_total", n);
        self.count("idem_outbox_duplicates_total", duplicates);
    }

    pub(super) fn retried(&self, n: u64) {
        self.count("idem_outbox_retried_total", n);
    }

    pub(super) fn parked(&self, n: u64) {
        self.count("idem_outbox_parked_total", n);
    }
}
