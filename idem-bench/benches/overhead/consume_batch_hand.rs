//! The hand-written sides of the batched consume-once rows (see
//! `consume_batch.rs`): B, C and D, one lapin loop taking `batch` messages
//! per transaction.

use std::sync::Arc;

use futures_util::StreamExt as _;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use sqlx::AssertSqlSafe;
use tokio::sync::{Semaphore, watch};

use crate::consume::{CONCURRENCY, PREFETCH, amqp_url};
use crate::consume_batch::{BATCH, Bench, Committed, LINGER, in_flight};

/// The effect of one message: its row.
pub(crate) async fn effect(
    insert: &Arc<str>,
    tx: &mut sqlx::PgConnection,
    id: &str,
) -> Result<(), String> {
    let q = sqlx::query(AssertSqlSafe(Arc::clone(insert))).bind(id);
    let n = q.execute(tx).await.map_err(|e| e.to_string())?;
    (n.rows_affected() == 1)
        .then_some(())
        .ok_or_else(|| format!("{id}: no row"))
}

/// B, C and D: a lapin loop by hand, `batch` messages per transaction (B and
/// D: 100 with A's linger, prefetch and batches in flight; C: 1, with the
/// per-message rows' prefetch and handlers).
#[derive(Clone)]
pub(crate) struct Hand {
    pub(crate) bench: Bench,
    pub(crate) committed: Arc<Committed>,
    pub(crate) batch: usize,
    /// D: the log's batch insert first.
    pub(crate) log: bool,
}

impl Hand {
    pub(crate) async fn run(
        self,
        queue: String,
        mut stop: watch::Receiver<bool>,
    ) -> anyhow::Result<()> {
        let (prefetch, slots) = if self.batch > 1 {
            ((BATCH * in_flight()) as u16, in_flight())
        } else {
            (PREFETCH, CONCURRENCY)
        };
        let conn = Connection::connect(&amqp_url(), ConnectionProperties::default()).await?;
        let ch = conn.create_channel().await?;
        ch.basic_qos(prefetch, BasicQosOptions::default()).await?;
        let opts = BasicConsumeOptions::default();
        let mut deliveries = ch
            .basic_consume(
                queue.as_str().into(),
                "bench-hand".into(),
                opts,
                FieldTable::default(),
            )
            .await?;
        let slots = Arc::new(Semaphore::new(slots));
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            let slot = slots.clone().acquire_owned().await?;
            let first = tokio::select! {
                d = deliveries.next() => d,
                _ = stop.wait_for(|s| *s) => break,
            };
            let Some(first) = first else { break };
            let mut unit = vec![first?];
            let deadline = tokio::time::Instant::now() + LINGER;
            while unit.len() < self.batch {
                tokio::select! {
                    biased;
                    d = deliveries.next() => match d {
                        Some(d) => unit.push(d?),
                        None => break,
                    },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            let hand = self.clone();
            tasks.spawn(async move {
                let r = hand.commit(unit).await;
                if let Err(e) = &r {
                    eprintln!("bench by hand: {e:#}");
                }
                drop(slot);
                r
            });
        }
        while let Some(r) = tasks.join_next().await {
            r??;
        }
        let _ = conn.close(200, "bench done".into()).await;
        Ok(())
    }

    /// One transaction for the unit, then its acks.
    async fn commit(&self, unit: Vec<lapin::message::Delivery>) -> anyhow::Result<()> {
        let mut tx = self.bench.pg.begin().await?;
        let ids = unit
            .iter()
            .map(|d| d.properties.message_id().as_ref().map(|s| s.to_string()));
        let ids: Vec<String> = ids
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("no id"))?;
        if self.log {
            let ns = self.bench.idem.namespace();
            let keys: Vec<String> = ids
                .iter()
                .map(|id| format!("{ns}:bench-batch:{id}"))
                .collect();
            let biz: Vec<String> = ids
                .iter()
                .map(|i| format!("{ns}:bench-batch:bench:{i}"))
                .collect();
            let sql = AssertSqlSafe(Arc::clone(&self.bench.log));
            let q = sqlx::query_scalar::<_, String>(sql)
                .bind(keys)
                .bind(biz)
                .bind(7 * 86_400_000_000i64);
            anyhow::ensure!(
                q.fetch_all(&mut *tx).await?.len() == ids.len(),
                "duplicates"
            );
        }
        for id in &ids {
            effect(&self.bench.insert, &mut tx, id)
                .await
                .map_err(anyhow::Error::msg)?;
        }
        tx.commit().await?;
        self.committed.add(unit.len());
        for d in unit {
            d.acker.ack(BasicAckOptions::default()).await?;
        }
        Ok(())
    }
}
