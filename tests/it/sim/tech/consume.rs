//! The consume log (`idem::consume::consume_once(&mut tx, message).run(body)`)
//! under broker redelivery, in a real SQLite caller database: each business
//! fact is published under one or two message ids (a publisher's retry sends
//! the same fact under a new id), each message is delivered one to three
//! times in a shuffled order; each delivery's body writes the business row
//! and succeeds or fails, and its transaction commits, rolls back, or its
//! consumer is dropped at an await. Finally every message is delivered once
//! more.
//!
//! | invariant | statement |
//! |---|---|
//! | `consume-once` | committed business rows per fact ≤ 1: business effects equal distinct business ids |
//! | `consume-duplicate-backed` | `Duplicate { MessageId }` only after a committed processing of that message id, `Duplicate { BusinessId }` only after one of that fact under another id |
//! | `consume-progress` | the final redeliveries leave every fact processed exactly once |
//! | `consume-errors` | no delivery fails but with its own body's error |

use idem::consume::{Consumed, DuplicateOf, Message, consume_once};

use super::SeedRun;
use super::sqlite::{cut_after, int, with_db};
use crate::sim::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Commit,
    Rollback,
    Cut(u32),
}

#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) msg: usize,
    pub(crate) fact: usize,
    pub(crate) ok: bool,
    pub(crate) end: End,
}

#[derive(Debug, Clone)]
pub(crate) struct ConsumeSchedule {
    pub(crate) seed: u64,
    pub(crate) facts: usize,
    pub(crate) deliveries: Vec<Delivery>,
}

impl ConsumeSchedule {
    pub(crate) fn generate(seed: u64) -> ConsumeSchedule {
        let mut r = Rng::new(seed);
        let facts = r.range(1, 2) as usize;
        let mut msgs = Vec::new();
        for f in 0..facts {
            for _ in 0..r.range(1, 2) {
                msgs.push(f);
            }
        }
        let mut deliveries = Vec::new();
        for (m, f) in msgs.iter().enumerate() {
            for _ in 0..r.range(1, 2) {
                deliveries.push(Delivery {
                    msg: m,
                    fact: *f,
                    ok: r.chance(80),
                    end: match r.range(0, 9) {
                        0 => End::Rollback,
                        1 => End::Cut(r.range(0, 3) as u32),
                        _ => End::Commit,
                    },
                });
            }
        }
        for i in (1..deliveries.len()).rev() {
            deliveries.swap(i, r.range(0, i as u64) as usize);
        }
        // The final redelivery of every message.
        for (m, f) in msgs.iter().enumerate() {
            deliveries.push(Delivery {
                msg: m,
                fact: *f,
                ok: true,
                end: End::Commit,
            });
        }
        ConsumeSchedule {
            seed,
            facts,
            deliveries,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Got {
    Processed,
    Duplicate(DuplicateOf),
    BodyFailed,
    Err(String),
    Cut,
}

#[derive(Debug)]
enum CErr {
    Idem(idem::Error),
    Fail,
}

impl From<idem::Error> for CErr {
    fn from(e: idem::Error) -> Self {
        CErr::Idem(e)
    }
}

/// Per delivery: what it got and whether its transaction committed; then
/// the committed business rows per fact.
pub(crate) fn run(s: &ConsumeSchedule) -> (Vec<(Got, bool)>, Vec<i64>) {
    with_db(|pool| async move {
        sqlx::query("DELETE FROM idem_consume_log")
            .execute(&pool)
            .await
            .expect("empty the log");
        let mut got = Vec::new();
        for (i, d) in s.deliveries.iter().enumerate() {
            let mut tx = pool.begin().await.expect("begin");
            let msg_id = format!("m{}", d.msg);
            let fact = format!("f{}", d.fact);
            let message = Message {
                consumer: "sim",
                id: &msg_id,
                business: Some(("fact", &fact)),
            };
            let (ok, k) = (d.ok, d.fact as i64);
            let fut = consume_once(&mut tx, message).run(
                async move |tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>| {
                    sqlx::query("INSERT INTO t_biz (k, call) VALUES (?, ?)")
                        .bind(k)
                        .bind(i as i64)
                        .execute(&mut **tx)
                        .await
                        .map_err(|e| CErr::Idem(idem::Error::Config(e.to_string())))?;
                    if ok { Ok(()) } else { Err(CErr::Fail) }
                },
            );
            let cut = match d.end {
                End::Cut(n) => Some(n),
                _ => None,
            };
            let g = match cut_after(cut, fut).await {
                None => Got::Cut,
                Some(Ok(Consumed::Processed(()))) => Got::Processed,
                Some(Ok(Consumed::Duplicate { by })) => Got::Duplicate(by),
                Some(Err(CErr::Fail)) => Got::BodyFailed,
                Some(Err(CErr::Idem(e))) => Got::Err(e.to_string()),
            };
            let commit = d.end == End::Commit && g != Got::Cut;
            if commit {
                tx.commit().await.expect("commit");
            } else {
                drop(tx);
            }
            got.push((g, commit));
        }
        let mut rows = Vec::new();
        for f in 0..s.facts {
            rows.push(int(&pool, &format!("SELECT COUNT(*) FROM t_biz WHERE k = {f}")).await);
        }
        (got, rows)
    })
}

pub(crate) fn check(s: &ConsumeSchedule, got: &[(Got, bool)], rows: &[i64]) -> Result<(), String> {
    let mut v = Vec::new();
    let mut done_msgs = std::collections::HashSet::new();
    let mut done_facts = std::collections::HashSet::new();
    for (i, (d, (g, committed))) in s.deliveries.iter().zip(got).enumerate() {
        match g {
            Got::Duplicate(DuplicateOf::MessageId) if !done_msgs.contains(&d.msg) => v.push(
                format!("[consume-duplicate-backed] delivery {i} (m{}) told a duplicate message id nobody processed", d.msg),
            ),
            Got::Duplicate(DuplicateOf::BusinessId) if !done_facts.contains(&d.fact) => v.push(
                format!("[consume-duplicate-backed] delivery {i} (f{}) told a duplicate business id nobody processed", d.fact),
            ),
            Got::Duplicate(_) | Got::Cut => {}
            Got::Processed if *committed => {
                done_msgs.insert(d.msg);
                done_facts.insert(d.fact);
            }
            Got::Processed => {}
            Got::BodyFailed if !d.ok => {}
            other => v.push(format!("[consume-errors] delivery {i}: {other:?}")),
        }
    }
    for (f, n) in rows.iter().enumerate() {
        if *n > 1 {
            v.push(format!(
                "[consume-once] fact f{f} has {n} committed business rows"
            ));
        }
        if *n != 1 {
            v.push(format!(
                "[consume-progress] after the final redeliveries fact f{f} has {n} rows"
            ));
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

/// `consume-duplicate-label`: a redelivery of a message id whose first
/// delivery was processed and committed is `Duplicate { MessageId }`
/// (`DuplicateOf::MessageId`'s contract). Checked by the pinned regression
/// only: on SQLite it fails on every tree so far, and would hide the other
/// invariants of the sweep.
pub(crate) fn check_labels(s: &ConsumeSchedule, got: &[(Got, bool)]) -> Result<(), String> {
    let mut done = std::collections::HashSet::new();
    let mut v = Vec::new();
    for (i, (d, (g, committed))) in s.deliveries.iter().zip(got).enumerate() {
        if done.contains(&d.msg) && *g != Got::Duplicate(DuplicateOf::MessageId) {
            v.push(format!(
                "[consume-duplicate-label] delivery {i} redelivered processed message m{} and got {g:?}",
                d.msg
            ));
        }
        if *g == Got::Processed && *committed {
            done.insert(d.msg);
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = ConsumeSchedule::generate(seed);
    let (got, rows) = run(&s);
    let verdict = check(&s, &got, &rows);
    let outcomes = got
        .iter()
        .map(|(g, _)| match g {
            Got::Err(_) => "Err".to_owned(),
            g => format!("{g:?}"),
        })
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| {
        let mut d = format!("seed {}: {} facts\n", s.seed, s.facts);
        for (i, (dl, g)) in s.deliveries.iter().zip(&got).enumerate() {
            d.push_str(&format!("  {i}: {dl:?} -> {g:?}\n"));
        }
        d.push_str(&format!("rows per fact: {rows:?}\n"));
        d
    });
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_consume_log_seeded_schedules() {
    super::sweep(
        "consume",
        seed_run,
        &[
            "Processed",
            // SQLite names the business id's index when both are violated
            // (a redelivered message id): see the pinned regression.
            "Duplicate(BusinessId)",
            "BodyFailed",
            "Cut",
        ],
    );
}
