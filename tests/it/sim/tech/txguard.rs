//! The transactional guard (`guard(..).in_tx(&mut tx).run(..)`) with a memory
//! front store shared by one or two processes, over a real SQLite caller
//! database: transactions of one to three guarded calls (the same key twice
//! in one transaction included, as a batch with a repeated event does),
//! bodies that insert a business row and succeed or fail, callers dropped at
//! any await (in the front read, the claim, the body, the complete), and
//! transactions that then commit or roll back. The front store loses replies
//! and keys, refuses, and is `forget`-ed or emptied between transactions.
//!
//! | invariant | statement |
//! |---|---|
//! | `tx-front-committed` | after every transaction, each finished record the front store holds is the one committed in the table: a rolled-back transaction leaves no record anywhere, front store included (issue 24 a) |
//! | `tx-replay-first` | a replay returns the committed record's value, or an earlier execution's of the same transaction |
//! | `tx-business-once` | committed business rows per key ≤ 1, unless a caller dropped mid-body and its transaction committed the partial body |
//! | `tx-no-stuck-claim` | a committed transaction leaves no unfinished claim that outlives the lease (issue 24 b) |
//! | `tx-errors` | no call fails but with its own body's error |

use std::sync::Arc;
use std::time::Duration;

use idem::store::memory::MemoryStore;
use idem::store::{RecordState, Store};
use idem::{FaultPlan, FaultyStore, How, Idem};

use super::sqlite::{cut_after, int, with_db};
use crate::sim::rng::Rng;

#[derive(Debug, Clone)]
pub(crate) struct TxCall {
    pub(crate) key: usize,
    pub(crate) ok: bool,
    /// The caller is dropped at this await of the call.
    pub(crate) cut: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Between {
    Nothing,
    Forget(usize),
    FlushAll,
}

#[derive(Debug, Clone)]
pub(crate) struct Tx {
    pub(crate) proc: usize,
    pub(crate) calls: Vec<TxCall>,
    pub(crate) commit: bool,
    pub(crate) then: Between,
}

#[derive(Debug, Clone)]
pub(crate) struct TxSchedule {
    pub(crate) seed: u64,
    pub(crate) procs: usize,
    pub(crate) keys: usize,
    pub(crate) plan: Option<FaultPlan>,
    pub(crate) txs: Vec<Tx>,
}

/// The guard's lease (the transactional guard uses the default).
const LEASE: Duration = idem::policy::DEFAULT_LEASE;

impl TxSchedule {
    pub(crate) fn generate(seed: u64) -> TxSchedule {
        let mut r = Rng::new(seed);
        let procs = r.range(1, 2) as usize;
        let keys = r.range(1, 3) as usize;
        let plan = r.chance(40).then(|| FaultPlan {
            seed: r.next_u64(),
            unavailable: r.range(0, 20) as f64 / 100.0,
            lost_reply: r.range(0, 20) as f64 / 100.0,
            lost_key: r.range(0, 10) as f64 / 100.0,
            slow: 0.0,
            delay: Duration::ZERO,
        });
        let txs = (0..r.range(2, 6))
            .map(|_| Tx {
                proc: r.range(0, procs as u64 - 1) as usize,
                calls: (0..r.range(1, 3))
                    .map(|_| TxCall {
                        key: r.range(0, keys as u64 - 1) as usize,
                        ok: r.chance(80),
                        cut: r.chance(12).then(|| r.range(0, 6) as u32),
                    })
                    .collect(),
                commit: r.chance(70),
                then: match r.range(0, 9) {
                    0 => Between::Forget(r.range(0, keys as u64 - 1) as usize),
                    1 => Between::FlushAll,
                    _ => Between::Nothing,
                },
            })
            .collect();
        TxSchedule {
            seed,
            procs,
            keys,
            plan,
            txs,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TxResult {
    Ok(How, u64),
    BodyFailed,
    InProgress,
    Err(String),
    Cut,
}

#[derive(Debug, Clone)]
pub(crate) struct TxStep {
    /// Per call: its id (business row tag) and result.
    pub(crate) results: Vec<(usize, TxResult)>,
    pub(crate) body_ran: Vec<bool>,
    /// Committed value per key before the transaction (from the table).
    pub(crate) committed_before: Vec<Option<u64>>,
    pub(crate) violations: Vec<String>,
}

#[derive(Debug)]
enum TxErr {
    Idem(idem::Error),
    Fail,
}

impl From<idem::Error> for TxErr {
    fn from(e: idem::Error) -> Self {
        TxErr::Idem(e)
    }
}

fn value_of(payload: &[u8]) -> Option<u64> {
    payload
        .get(7..)
        .and_then(|j| serde_json::from_slice::<u64>(j).ok())
}

/// The committed record of each key in the table, decoded.
async fn committed(pool: &sqlx::SqlitePool, keys: &[String]) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for k in keys {
        let p: Option<Vec<u8>> =
            sqlx::query_scalar("SELECT payload FROM idem_records WHERE idem_key = ? AND state = 1")
                .bind(k)
                .fetch_optional(pool)
                .await
                .expect("read the table");
        out.push(p.and_then(|p| value_of(&p)));
    }
    out
}

pub(crate) fn run(s: &TxSchedule) -> Vec<TxStep> {
    with_db(|pool| async move {
        let front = Arc::new(MemoryStore::new());
        let faulty = Arc::new(FaultyStore::new(Arc::clone(&front) as Arc<dyn Store>));
        faulty.set_plan(s.plan);
        let ns = format!("txsim{}", s.seed);
        let procs: Vec<Idem> = (0..s.procs)
            .map(|p| {
                let idem = Idem::builder()
                    .shared_store(faulty.clone())
                    .namespace(ns.as_str())
                    .build()
                    .expect("a valid handle");
                idem.__seed_jitter(super::jitter_seed(s.seed, p as u64));
                idem
            })
            .collect();
        let keys: Vec<String> = (0..s.keys)
            .map(|k| procs[0].key("txsim", &[&k]).as_str().to_owned())
            .collect();
        let mut steps = Vec::new();
        let mut call_id = 0usize;
        let probes: Vec<Tx> = (0..s.keys)
            .flat_map(|k| {
                (0..s.procs).map(move |p| Tx {
                    proc: p,
                    calls: vec![TxCall {
                        key: k,
                        ok: true,
                        cut: None,
                    }],
                    commit: true,
                    then: Between::Nothing,
                })
            })
            .collect();
        let mut excused = vec![false; s.keys];
        for (ti, t) in s.txs.iter().chain(&probes).enumerate() {
            let probing = ti >= s.txs.len();
            if probing {
                faulty.set_plan(None);
            }
            let committed_before = committed(&pool, &keys).await;
            let idem = &procs[t.proc];
            let mut tx = pool.begin().await.expect("begin");
            let mut results = Vec::new();
            let mut body_ran = Vec::new();
            for c in &t.calls {
                let id = call_id;
                call_id += 1;
                let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let ran2 = Arc::clone(&ran);
                let (ok, key) = (c.ok, c.key);
                let fut = idem
                    .guard("txsim", &[&c.key])
                    .in_tx(&mut tx)
                    .run(move |tx, _fence| {
                        Box::pin(async move {
                            ran2.store(true, std::sync::atomic::Ordering::SeqCst);
                            sqlx::query("INSERT INTO t_biz (k, call) VALUES (?, ?)")
                                .bind(key as i64)
                                .bind(id as i64)
                                .execute(&mut **tx)
                                .await
                                .map_err(|e| TxErr::Idem(idem::Error::Config(e.to_string())))?;
                            if ok {
                                Ok(1000 + id as u64)
                            } else {
                                Err(TxErr::Fail)
                            }
                        })
                    });
                let r = match cut_after(c.cut, fut).await {
                    None => TxResult::Cut,
                    Some(Ok(o)) => TxResult::Ok(o.how(), o.into_inner()),
                    Some(Err(TxErr::Fail)) => TxResult::BodyFailed,
                    Some(Err(TxErr::Idem(idem::Error::InProgress { .. }))) => TxResult::InProgress,
                    Some(Err(TxErr::Idem(e))) => TxResult::Err(e.to_string()),
                };
                let ran = ran.load(std::sync::atomic::Ordering::SeqCst);
                if r == TxResult::Cut && ran && t.commit {
                    excused[c.key] = true;
                }
                results.push((id, r));
                body_ran.push(ran);
            }
            let commit_ok = if t.commit {
                tx.commit().await.is_ok()
            } else {
                tx.rollback().await.expect("rollback");
                false
            };
            let mut violations = Vec::new();
            if t.commit && !commit_ok {
                violations.push(format!("[tx-errors] transaction {ti} failed to commit"));
            }
            match t.then {
                Between::Forget(k) => {
                    let _ = front.forget(&keys[k]).await;
                }
                Between::FlushAll => {
                    let _ = faulty.lose_all_keys().await;
                }
                Between::Nothing => {}
            }
            // tx-front-committed
            let now_committed = committed(&pool, &keys).await;
            for (k, key) in keys.iter().enumerate() {
                if let Ok(Some(RecordState::Done { record, .. })) = front.inspect(key).await {
                    let v = value_of(&record.payload);
                    if v != now_committed[k] {
                        violations.push(format!(
                            "[tx-front-committed] after transaction {ti} (commit: {}), the front store holds {v:?} for key {k}; the table has {:?}",
                            t.commit, now_committed[k]
                        ));
                    }
                }
                // tx-business-once
                let rows = int(&pool, &format!("SELECT COUNT(*) FROM t_biz WHERE k = {k}")).await;
                if rows > 1 && !excused[k] {
                    violations.push(format!(
                        "[tx-business-once] after transaction {ti}, key {k} has {rows} committed business rows"
                    ));
                }
            }
            // tx-no-stuck-claim
            if t.commit {
                let stuck = int(
                    &pool,
                    &format!(
                        "SELECT COUNT(*) FROM idem_records WHERE state = 0 AND expires_at > CAST(unixepoch('subsec') * 1000000 AS INTEGER) + {}",
                        (LEASE + Duration::from_secs(1)).as_micros()
                    ),
                )
                .await;
                if stuck > 0 {
                    violations.push(format!(
                        "[tx-no-stuck-claim] transaction {ti} committed {stuck} unfinished claim(s) outliving the {LEASE:?} lease"
                    ));
                }
            }
            steps.push(TxStep {
                results,
                body_ran,
                committed_before,
                violations,
            });
        }
        steps
    })
}
