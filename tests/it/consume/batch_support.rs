//! Fixtures of the batched consumer tests: a refund message with a failure
//! switch, the same handler on each database (it writes its refund row, then
//! fails when told to, so a failure has something to roll back), and one
//! batch run on a [`LogDb`].

use std::sync::Arc;

use idem::consume::{Batch, BatchHandler, Delivery, Record, RecordOutcome};

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

/// The batched consumer on PostgreSQL.
pub(crate) fn pg_batch(pool: sqlx::PgPool, idem: &idem::Idem, size: usize) -> Batch<PgRefunds> {
    Batch::new(pool, CONSUMER, PgRefunds::default())
        .handle(idem.clone())
        .size(size)
}

/// Runs one batch of `deliveries` on `db`'s database.
pub(crate) async fn consume(
    db: &LogDb,
    idem: &idem::Idem,
    deliveries: &[Delivery],
) -> Vec<RecordOutcome> {
    match &db.pool {
        Pool::Pg(p) => pg_batch(p.clone(), idem, 100).consume(deliveries).await,
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
