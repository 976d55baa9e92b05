//! Fixtures of the batched consumer tests: a refund message with a failure
//! switch, the same handler on each database (it writes its refund row, then
//! fails when told to, so a failure has something to roll back), and one
//! batch run on a [`LogDb`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idem::consume::{Batch, BatchHandler, ConsumerOptions, Delivery, Record, RecordOutcome};

use crate::consume::support::{LogDb, Pool};

/// The consumer name of every batch test (the log keys' scene).
pub(crate) const CONSUMER: &str = "refund-service";

/// A refund message; `fail` makes its body fail on every delivery.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct BatchMsg {
    pub(crate) order_no: String,
    #[serde(default)]
    pub(crate) fail: bool,
}

/// A delivery of a refund of `order_no` (no business id when empty).
pub(crate) fn delivery(id: &str, order_no: &str, fail: bool) -> Delivery {
    Delivery {
        id: Some(id.to_owned()),
        payload: body(order_no, fail),
        attempt: 1,
        redelivered: false,
        trace: None,
    }
}

pub(crate) fn body(order_no: &str, fail: bool) -> Vec<u8> {
    serde_json::to_vec(&BatchMsg {
        order_no: order_no.to_owned(),
        fail,
    })
    .unwrap()
}

/// Called after each commit with the number of messages it applied.
pub(crate) type AfterCommit = Arc<dyn Fn(usize) + Send + Sync>;

/// A message as the handlers keep it: its id and its body.
pub(crate) type Msg = (String, BatchMsg);

fn parse(d: &Delivery) -> Result<Record<Msg>, String> {
    let id = d.id.clone().ok_or("a message without an id")?;
    let msg: BatchMsg =
        serde_json::from_slice(&d.payload).map_err(|e| format!("bad payload: {e}"))?;
    let order_no = msg.order_no.clone();
    let record = Record::new(id.clone(), (id, msg));
    Ok(if order_no.is_empty() {
        record
    } else {
        record.business("refund", order_no)
    })
}

macro_rules! refunds {
    ($name:ident, $db:ty, $insert:literal) => {
        /// Refunds on this database: the row, then the failure if asked.
        #[derive(Default)]
        pub(crate) struct $name {
            pub(crate) after_commit: Option<AfterCommit>,
        }

        impl BatchHandler for $name {
            type Db = $db;
            type Msg = Msg;
            type Error = String;

            fn parse(&self, d: &Delivery) -> Result<Record<Msg>, String> {
                parse(d)
            }

            async fn handle(
                &self,
                tx: &mut sqlx::Transaction<'static, $db>,
                (id, msg): &Msg,
            ) -> Result<(), String> {
                sqlx::query($insert)
                    .bind(&msg.order_no)
                    .bind(id)
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| e.to_string())?;
                if msg.fail {
                    return Err(format!("refund of {} refused", msg.order_no));
                }
                Ok(())
            }

            fn after_commit(&self, applied: &[&Msg]) {
                if let Some(f) = &self.after_commit {
                    f(applied.len());
                }
            }
        }
    };
}

refunds!(
    PgRefunds,
    sqlx::Postgres,
    "INSERT INTO refunds VALUES ($1, $2, 'refund')"
);
refunds!(
    MyRefunds,
    sqlx::MySql,
    "INSERT INTO refunds VALUES (?, ?, 'refund')"
);
refunds!(
    LiteRefunds,
    sqlx::Sqlite,
    "INSERT INTO refunds VALUES (?, ?, 'refund')"
);

/// The batched consumer on PostgreSQL, with `after_commit` if given.
pub(crate) fn pg_batch(
    pool: sqlx::PgPool,
    idem: &idem::Idem,
    size: usize,
    after_commit: Option<AfterCommit>,
) -> Batch<PgRefunds> {
    Batch::new(pool, CONSUMER, PgRefunds { after_commit })
        .handle(idem.clone())
        .size(size)
}

/// Records each commit's number of applied messages.
pub(crate) fn commit_log() -> (AfterCommit, Arc<Mutex<Vec<usize>>>) {
    let commits = Arc::new(Mutex::new(Vec::new()));
    let log = commits.clone();
    (Arc::new(move |n| log.lock().unwrap().push(n)), commits)
}

/// What the poison hook saw: (message id, attempt, error), per call.
pub(crate) type Hooked = Arc<Mutex<Vec<(Option<String>, u32, String)>>>;

/// Options of the poison tests: three deliveries at most, a short retry
/// pause, two batches at once, and a hook that records its calls.
pub(crate) fn poison_opts() -> (ConsumerOptions, Hooked) {
    let hooked: Hooked = Arc::default();
    let mut opts = ConsumerOptions::new(CONSUMER);
    opts.max_deliveries = 3;
    opts.retry_delay = Duration::from_millis(20);
    opts.concurrency = 2;
    opts.on_poison = Some({
        let hooked = hooked.clone();
        Arc::new(move |p: &idem::consume::Poisoned| {
            hooked.lock().unwrap().push((
                p.delivery.id.clone(),
                p.delivery.attempt,
                p.error.clone(),
            ));
        })
    });
    (opts, hooked)
}

/// 30 refunds and, among them, one whose body always fails (`m-poison`):
/// (message id, body) in publishing order.
pub(crate) fn thirty_and_a_poison() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = (0..30)
        .map(|i| (format!("m-{i}"), body(&format!("o-{i}"), false)))
        .collect();
    v.insert(7, ("m-poison".into(), body("o-poison", true)));
    v
}

/// Waits (60 s at most) until `done` holds.
pub(crate) async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs one batch of `deliveries` on `db`'s database.
pub(crate) async fn consume(
    db: &LogDb,
    idem: &idem::Idem,
    deliveries: &[Delivery],
) -> Vec<RecordOutcome> {
    match &db.pool {
        Pool::Pg(p) => {
            pg_batch(p.clone(), idem, 100, None)
                .consume(deliveries)
                .await
        }
        Pool::My(p) => {
            let b = Batch::new(p.clone(), CONSUMER, MyRefunds::default()).handle(idem.clone());
            b.consume(deliveries).await
        }
        Pool::Lite(p) => {
            let b = Batch::new(p.clone(), CONSUMER, LiteRefunds::default()).handle(idem.clone());
            b.consume(deliveries).await
        }
    }
}
