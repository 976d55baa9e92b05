//! One batch through the consume log: parse, deduplicate, apply, commit.
//!
//! A first pass runs every new record's body without a savepoint, the cheap
//! path when nothing fails. A body error rolls that transaction back; the
//! record is failed alone and a second pass runs the rest, each body now in
//! its own savepoint: a failure there rolls back to it and deletes the
//! record's log row, while the others commit. Two passes at most, whatever
//! fails.
//!
//! Records sharing a message key or business key run in waves: each wave
//! holds no two of them, and a later record waits for the earlier one's
//! outcome (committed: a duplicate; rolled back: it runs), as a second
//! delivery waits on the log's unique key in the loop per message.
//!
//! A failure of the transaction itself (begin, the batch insert, a
//! savepoint, the commit) fails every record of the pass; a conflict with a
//! concurrent transaction (a deadlock, a row inserted between MySQL's read
//! and insert) runs the pass again first.

use std::collections::HashSet;

use super::dedupe::{self, Row};
use super::{Batch, BatchHandler, RecordOutcome};
use crate::backstop::find_unique_violation;
use crate::consume::message::{LogTable, Message};
use crate::consume::outcome::Consumed;
use crate::consume::run::{Keys, db_error, keys, observed};
use crate::consume::worker::Delivery;
use crate::db::savepoint::Savepoint;
use crate::db::{Dialect, SqlConn as _, SqlDb, SqlDialect as _};
use crate::error::Error;
use crate::key::{Key, KeyPart};
use crate::observe::CallOutcome;
use crate::sql_kernel::retry::{CONFLICT_RETRIES, is_retryable_conflict, pause};

/// A parsed record: its keys and message.
struct Rec<M> {
    keys: Keys,
    msg: M,
}

/// How a record ended.
enum Fate {
    Processed,
    Duplicate,
    /// Its body failed: rolled back alone.
    Released(String),
    /// The batch's transaction failed.
    Failed(String),
}

/// Why a pass stopped.
enum Stop {
    /// A body failed in the pass without savepoints: the record, its error.
    Body(usize, String),
    /// The transaction failed; a conflict is worth another pass.
    Batch { retry: bool, error: String },
}

pub(super) async fn consume<H: BatchHandler>(
    b: &Batch<H>,
    deliveries: &[Delivery],
) -> Vec<RecordOutcome> {
    let mut out = vec![RecordOutcome::Duplicate; deliveries.len()];
    let mut recs = Vec::with_capacity(deliveries.len());
    let mut at = Vec::with_capacity(deliveries.len());
    for (i, d) in deliveries.iter().enumerate() {
        match b.handler.parse(d) {
            Ok(r) => {
                let business = r.business.as_ref().map(|(ty, id)| {
                    let id: &(dyn KeyPart + Sync) = id;
                    (ty.as_ref(), id)
                });
                let message = Message {
                    consumer: &b.consumer,
                    id: &r.id,
                    business,
                };
                let keys = keys(b.handle.as_ref(), &message);
                recs.push(Rec { keys, msg: r.msg });
                at.push(i);
            }
            Err(e) => out[i] = RecordOutcome::Failed(e.to_string()),
        }
    }
    if recs.is_empty() {
        return out;
    }
    let fates = passes(b, &recs).await;
    for ((r, fate), i) in recs.iter().zip(fates).zip(at) {
        let (label, outcome) = match fate {
            Fate::Processed => (CallOutcome::Executed, RecordOutcome::Processed),
            Fate::Duplicate => (CallOutcome::DuplicateMessage, RecordOutcome::Duplicate),
            Fate::Released(e) => (CallOutcome::Released, RecordOutcome::Failed(e)),
            Fate::Failed(e) => (CallOutcome::Failed, RecordOutcome::Failed(e)),
        };
        count(b.handle.as_ref(), &r.keys.msg, label).await;
        out[i] = outcome;
    }
    out
}

/// Counts one record's outcome as a consume call.
async fn count(handle: Option<&crate::handle::Idem>, key: &Key, label: CallOutcome) {
    let done = Ok::<_, Error>(Consumed::Processed(()));
    let _ = observed(handle, key, std::future::ready((label, done))).await;
}

/// The first pass, and the second one after a body failed in it.
async fn passes<H: BatchHandler>(b: &Batch<H>, recs: &[Rec<H::Msg>]) -> Vec<Fate> {
    let log = LogTable {
        table: &b.table,
        retention: b.retention,
    };
    if let Err(e) = log.check() {
        let e = e.to_string();
        return recs.iter().map(|_| Fate::Failed(e.clone())).collect();
    }
    let all: Vec<usize> = (0..recs.len()).collect();
    let (failed, error) = match pass(b, recs, &all, false).await {
        Ok(fates) => return fates,
        Err(Stop::Batch { error, .. }) => {
            return recs.iter().map(|_| Fate::Failed(error.clone())).collect();
        }
        Err(Stop::Body(i, error)) => (i, error),
    };
    let rest: Vec<usize> = all.into_iter().filter(|&i| i != failed).collect();
    let mut fates: Vec<Fate> = match pass(b, recs, &rest, true).await {
        Ok(f) => f,
        Err(Stop::Batch { error, .. } | Stop::Body(_, error)) => {
            rest.iter().map(|_| Fate::Failed(error.clone())).collect()
        }
    };
    fates.insert(failed, Fate::Released(error));
    fates
}

/// Runs the records `which` in one transaction, again after a conflict; one
/// fate per record of `which`.
async fn pass<H: BatchHandler>(
    b: &Batch<H>,
    recs: &[Rec<H::Msg>],
    which: &[usize],
    isolate: bool,
) -> Result<Vec<Fate>, Stop> {
    let mut tries = 0;
    loop {
        match attempt(b, recs, which, isolate).await {
            Err(Stop::Batch { retry: true, .. }) if tries < CONFLICT_RETRIES => {
                tries += 1;
                pause(tries).await;
            }
            r => return r,
        }
    }
}

async fn attempt<H: BatchHandler>(
    b: &Batch<H>,
    recs: &[Rec<H::Msg>],
    which: &[usize],
    isolate: bool,
) -> Result<Vec<Fate>, Stop> {
    let mut tx = begin(&b.pool).await.map_err(|e| stop(b, e, false))?;
    let mut fates: Vec<Option<Fate>> = which.iter().map(|_| None).collect();
    if let Err(s) = apply(b, &mut tx, recs, which, isolate, &mut fates).await {
        let _ = tx.rollback().await;
        return Err(s);
    }
    tx.commit().await.map_err(|e| stop(b, e, false))?;
    let applied: Vec<&H::Msg> = which
        .iter()
        .zip(&fates)
        .filter(|(_, f)| matches!(f, Some(Fate::Processed)))
        .map(|(&i, _)| &recs[i].msg)
        .collect();
    b.handler.after_commit(&applied);
    Ok(fates
        .into_iter()
        .map(|f| f.unwrap_or_else(|| Fate::Failed("not reached".into())))
        .collect())
}

/// The statements of one pass: per wave, the batch insert, then the new
/// records' bodies.
async fn apply<H: BatchHandler>(
    b: &Batch<H>,
    tx: &mut sqlx::Transaction<'static, H::Db>,
    recs: &[Rec<H::Msg>],
    which: &[usize],
    isolate: bool,
    fates: &mut [Option<Fate>],
) -> Result<(), Stop> {
    let dialect = H::Db::DIALECT;
    let retention = crate::db::micros(b.retention);
    for wave in waves(recs, which) {
        let rows: Vec<Row<'_>> = wave
            .iter()
            .map(|&p| {
                let k = &recs[which[p]].keys;
                (k.msg.as_str(), k.biz.as_ref().map(Key::as_str))
            })
            .collect();
        let fresh = dedupe::insert(tx.any(), &b.table, &rows, retention)
            .await
            .map_err(|e| stop(b, e, true))?;
        for &p in &wave {
            let r = &recs[which[p]];
            if !fresh.contains(r.keys.msg.as_str()) {
                fates[p] = Some(Fate::Duplicate);
                continue;
            }
            if !isolate {
                match b.handler.handle(tx, &r.msg).await {
                    Ok(()) => fates[p] = Some(Fate::Processed),
                    Err(e) => return Err(Stop::Body(which[p], e.to_string())),
                }
                continue;
            }
            let sp = Savepoint::take(tx, "batch")
                .await
                .map_err(|e| stop(b, e, false))?;
            fates[p] = Some(match b.handler.handle(tx, &r.msg).await {
                Ok(()) => {
                    sp.release(tx).await.map_err(|e| stop(b, e, false))?;
                    Fate::Processed
                }
                Err(e) => {
                    // A savepoint that is gone (MySQL rolls a deadlocked
                    // transaction back whole) fails the pass: nothing after
                    // it may run outside the transaction.
                    sp.undo(tx).await.map_err(|e| stop(b, e, false))?;
                    dedupe::forget(tx.any(), dialect, &b.table, r.keys.msg.as_str())
                        .await
                        .map_err(|e| stop(b, e, false))?;
                    Fate::Released(e.to_string())
                }
            });
        }
    }
    Ok(())
}

/// The records `which` (positions into it) in waves, in order: no two of a
/// wave share a message key or a business key, and a record sharing one with
/// an earlier record comes in a later wave than it.
fn waves<M>(recs: &[Rec<M>], which: &[usize]) -> Vec<Vec<usize>> {
    let mut left: Vec<usize> = (0..which.len()).collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let (mut msg, mut biz) = (HashSet::new(), HashSet::new());
        let (mut wave, mut later) = (Vec::new(), Vec::new());
        for p in left {
            let k = &recs[which[p]].keys;
            // Both sets take the keys of deferred records too, so that order
            // among records of one key is kept.
            let new_msg = msg.insert(k.msg.as_str());
            let new_biz = k.biz.as_ref().is_none_or(|b| biz.insert(b.as_str()));
            if new_msg && new_biz {
                wave.push(p);
            } else {
                later.push(p);
            }
        }
        out.push(wave);
        left = later;
    }
    out
}

/// A transaction for a batch; SQLite's takes the write lock first, as a
/// writing transaction must there.
async fn begin<DB: SqlDb>(
    pool: &sqlx::Pool<DB>,
) -> Result<sqlx::Transaction<'static, DB>, sqlx::Error> {
    match DB::DIALECT {
        Dialect::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
        _ => pool.begin().await,
    }
}

/// A failed statement of the batch's transaction. `dedupe`: the batch
/// insert, where a unique violation is a row a concurrent transaction
/// inserted after MySQL's read: worth another pass, as a deadlock is.
fn stop<H: BatchHandler>(b: &Batch<H>, e: sqlx::Error, dedupe: bool) -> Stop {
    let retry = is_retryable_conflict(&e) || (dedupe && find_unique_violation(&e).is_some());
    let key = format!("consume batch of `{}`", b.consumer);
    Stop::Batch {
        retry,
        error: db_error(&key, &b.table, e).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(m: &str, b: Option<&str>) -> Rec<()> {
        let message = Message {
            consumer: "c",
            id: &m,
            business: b.map(|b| ("t", &*Box::leak(Box::new(b.to_owned())) as _)),
        };
        let (msg, biz) = message.keys("ns");
        Rec {
            keys: Keys { msg, biz },
            msg: (),
        }
    }

    #[test]
    fn waves_keep_records_of_one_key_apart_and_in_order() {
        let recs = [
            rec("m1", Some("o1")),
            rec("m2", Some("o1")),
            rec("m1", None),
            rec("m3", Some("o2")),
            rec("m4", Some("o1")),
        ];
        let which: Vec<usize> = (0..recs.len()).collect();
        assert_eq!(waves(&recs, &which), vec![vec![0, 3], vec![1, 2], vec![4]]);
        assert_eq!(waves(&recs, &[3, 4]), vec![vec![0, 1]]);
    }
}
