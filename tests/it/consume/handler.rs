//! The consumer the broker tests run: `#[idem::consume_once]` on a refund
//! message over PostgreSQL, the message's JSON, and what the broker loops
//! share in the tests (stop when idle, the child-process hook).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use idem::Consumed;
use idem::consume::{Counters, Delivery, Shutdown};

use crate::support::AppError;

/// A refund message: the payload the publisher sends.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct RefundMsg {
    /// Set from the broker's message id header by the handler.
    #[serde(skip)]
    pub(crate) id: String,
    pub(crate) order_no: String,
    /// Milliseconds the body sleeps (a slow refund).
    #[serde(default)]
    pub(crate) slow_ms: u64,
}

/// One refund per order, whatever the broker delivers.
#[idem::consume_once(msg_id = "<msg.id>", biz_id = "<msg.order_no>", tx = tx,
                     consumer = "refund-service", msg_type = "refund", handle = idem)]
pub(crate) async fn on_refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    idem: &idem::Idem,
    msg: &RefundMsg,
) -> Result<Consumed<()>, AppError> {
    sqlx::query("INSERT INTO refunds VALUES ($1, $2, 'refund')")
        .bind(&msg.order_no)
        .bind(&msg.id)
        .execute(&mut **tx)
        .await?;
    if msg.slow_ms > 0 {
        tokio::time::sleep(Duration::from_millis(msg.slow_ms)).await;
    }
    Ok(())
}

/// The handler of the broker loops: parse, consume in a transaction, commit.
/// `after_commit` runs between the commit and the loop's acknowledgement.
pub(crate) async fn handle_delivery(
    pool: sqlx::PgPool,
    idem: Arc<idem::Idem>,
    d: Delivery,
    after_commit: impl FnOnce(),
) -> Result<(), AppError> {
    let mut msg: RefundMsg = serde_json::from_slice(&d.payload)
        .map_err(|e| AppError::Business(format!("bad payload: {e}")))?;
    msg.id =
        d.id.ok_or_else(|| AppError::Business("no message id".into()))?;
    let mut tx = pool.begin().await?;
    // Processed or a duplicate: either way commit, and the loop acknowledges.
    let _consumed = on_refund(&mut tx, &idem, &msg).await?;
    tx.commit().await?;
    after_commit();
    Ok(())
}

/// Triggers `stop` once `counters` saw deliveries and then none for `idle`.
pub(crate) fn stop_when_idle(counters: Arc<Counters>, stop: Shutdown, idle: Duration) {
    tokio::spawn(async move {
        let mut last = u64::MAX;
        loop {
            tokio::time::sleep(idle).await;
            let now = Counters::get(&counters.delivered) + Counters::get(&counters.acked);
            if now > 0 && now == last {
                stop.trigger();
                return;
            }
            last = now;
        }
    });
}

/// Counts commits; aborts the process after the `n`th, before its ack.
#[derive(Debug, Default)]
pub(crate) struct CrashAfter {
    pub(crate) n: Option<u64>,
    commits: AtomicU64,
}

impl CrashAfter {
    pub(crate) fn new(n: Option<u64>) -> Self {
        CrashAfter {
            n,
            commits: AtomicU64::new(0),
        }
    }

    pub(crate) fn committed(&self) {
        let c = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(c) == self.n {
            eprintln!("IDEM_CHILD aborting after commit {c}, before its ack");
            std::process::abort();
        }
    }
}
