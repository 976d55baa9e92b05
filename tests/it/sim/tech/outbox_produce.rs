//! The producers of the outbox simulation: business transactions that
//! enqueue in a real SQLite transaction, planned so that they overlap as a
//! database with concurrent writers would let them, and run so that other
//! connections see what they would see.

use std::time::Duration;

use idem::outbox::OutboxTable;
use sqlx::SqlitePool;
use tokio::time::{Instant, sleep_until};

use super::outbox::{NAMESPACES, ObxSchedule, TOPICS, Txn, Visibility};

/// Whether an ordered enqueue waits for another open transaction's ordered
/// enqueue of the same business id (in `Mvcc`; SQLite's writers are serial
/// anyway). `OutboxTable::enqueue` promises it on PostgreSQL (a
/// transaction-scoped advisory lock) and MariaDB (a row of the outbox's lock
/// table); the simulation cannot observe those locks from SQLite, so the
/// model takes the promise as given and checks what the relay makes of it.
pub(crate) const ORDERED_ENQUEUES_WAIT: bool = true;

/// What one transaction did.
#[derive(Debug, Clone)]
pub(crate) struct TxOut {
    /// Per enqueue: the message id, or the error.
    pub(crate) ids: Vec<Result<String, String>>,
    /// Its place in commit order, if it committed.
    pub(crate) commit_no: Option<usize>,
    pub(crate) began: u64,
    pub(crate) ended: u64,
    pub(crate) seqs: Option<Vec<i64>>,
}

/// Each transaction's effective begin and end (ms) and, in `Mvcc`, the seqs
/// its enqueues drew. A transaction whose ordered enqueue must wait (see
/// [`ORDERED_ENQUEUES_WAIT`]) begins when the one it waits for ends.
pub(crate) fn plan(s: &ObxSchedule) -> Vec<(u64, u64, Option<Vec<i64>>)> {
    let mut by_at: Vec<usize> = (0..s.txs.len()).collect();
    by_at.sort_by_key(|&i| (s.txs[i].at_ms, i));
    let mut span: Vec<(u64, u64)> = vec![(0, 0); s.txs.len()];
    for (k, &i) in by_at.iter().enumerate() {
        let t = &s.txs[i];
        let mut begin = t.at_ms;
        if ORDERED_ENQUEUES_WAIT {
            // It gets the lock after the holder committed: strictly later,
            // so that even a transaction of no duration commits after it.
            for &j in &by_at[..k] {
                if conflict(&s.txs[j], t) && span[j].1 >= begin {
                    begin = span[j].1 + 1;
                }
            }
        }
        span[i] = (begin, begin + t.dur_ms);
    }
    let mut by_begin: Vec<usize> = (0..s.txs.len()).collect();
    by_begin.sort_by_key(|&i| (span[i].0, i));
    let mut seqs: Vec<Option<Vec<i64>>> = vec![None; s.txs.len()];
    let mut next = 1;
    for i in by_begin {
        if s.vis == Visibility::Mvcc {
            let n = s.txs[i].enq.len() as i64;
            seqs[i] = Some((next..next + n).collect());
            next += n;
        }
    }
    (0..s.txs.len())
        .map(|i| (span[i].0, span[i].1, seqs[i].take()))
        .collect()
}

/// Two transactions holding an ordered enqueue of one business id.
fn conflict(a: &Txn, b: &Txn) -> bool {
    a.ns == b.ns
        && a.enq
            .iter()
            .any(|x| x.ordered && b.enq.iter().any(|y| y.ordered && y.biz == x.biz))
}

/// Runs the transactions at their planned ends, in that order: a
/// transaction's statements all run at its end, which is what other
/// connections can see of it (SQLite lets no other writer in meanwhile).
pub(crate) async fn produce(
    s: ObxSchedule,
    plan: Vec<(u64, u64, Option<Vec<i64>>)>,
    pool: SqlitePool,
    t0: Instant,
) -> Vec<Option<TxOut>> {
    let mut order: Vec<usize> = (0..s.txs.len()).collect();
    order.sort_by_key(|&i| (plan[i].1, i));
    let mut out = vec![None; s.txs.len()];
    let mut commits = 0;
    for i in order {
        let (began, ended, seqs) = plan[i].clone();
        sleep_until(t0 + Duration::from_millis(ended)).await;
        let t = &s.txs[i];
        let ids = one_tx(&pool, t, seqs.as_deref()).await;
        let ok = t.commit && ids.iter().all(Result::is_ok);
        out[i] = Some(TxOut {
            ids,
            commit_no: ok.then(|| {
                commits += 1;
                commits - 1
            }),
            began,
            ended,
            seqs,
        });
    }
    out
}

/// One business transaction; in `Mvcc` each inserted row takes the seq its
/// enqueue drew (a row found already, from an earlier transaction, is left
/// alone).
async fn one_tx(pool: &SqlitePool, t: &Txn, seqs: Option<&[i64]>) -> Vec<Result<String, String>> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
    let max: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM idem_outbox")
        .fetch_one(&mut *tx)
        .await
        .expect("read the last seq");
    let mut ids = Vec::new();
    for (k, e) in t.enq.iter().enumerate() {
        let table = OutboxTable {
            namespace: NAMESPACES[t.ns],
            ordered: e.ordered,
            ..OutboxTable::default()
        };
        let got = table
            .enqueue(&mut tx, TOPICS[e.topic], &e.business_id(), &e.payload())
            .await;
        match got {
            Ok(id) => {
                if let Some(seqs) = seqs {
                    sqlx::query("UPDATE idem_outbox SET seq = ?1 WHERE id = ?2 AND seq > ?3")
                        .bind(seqs[k])
                        .bind(id.as_str())
                        .bind(max)
                        .execute(&mut *tx)
                        .await
                        .expect("renumber the row");
                }
                ids.push(Ok(id.as_str().to_owned()));
            }
            Err(e) => {
                ids.push(Err(e.to_string()));
                break;
            }
        }
    }
    if t.commit && ids.iter().all(Result::is_ok) {
        tx.commit().await.expect("commit");
    } else {
        tx.rollback().await.expect("rollback");
    }
    ids
}
