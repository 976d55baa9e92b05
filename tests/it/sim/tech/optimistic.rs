//! The `Optimistic` helper over a version column, in a real SQLite caller
//! database: requests with their own ids and the version their client read,
//! repeats of earlier requests (same id, same version), stale reads, retries,
//! the request column or not, a requirement (`stock >= n`) or not; each in a
//! transaction that commits, rolls back, or whose caller is dropped at an
//! await (the transaction then rolls back).
//!
//! | invariant | statement |
//! |---|---|
//! | `opt-once` | a request id changes the row in at most one committed transaction (with a request column, or without retries; retries without one are documented to re-apply) (issue 24 g) |
//! | `opt-told` | a committed `Applied { version }` changed the row once, to `version`; every other answer left it unchanged |
//! | `opt-already` | `AlreadyApplied` only for a request an earlier committed transaction applied |
//! | `opt-precondition` | `PreconditionFailed` only when the requirement was false |

use idem::db::Arg;
use idem::db::optimistic::{Optimistic, Versioned};

use super::SeedRun;
use super::sqlite::{cut_after, int, with_db};
use crate::sim::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Commit,
    Rollback,
    /// The caller is dropped at this await of the apply.
    Cut(u32),
}

#[derive(Debug, Clone)]
pub(crate) struct Submit {
    pub(crate) req: usize,
    /// The version the client read, if this is the request's first submission
    /// (`None`: read now; `Some(d)`: read `d` versions ago).
    pub(crate) stale: u32,
    pub(crate) end: End,
}

#[derive(Debug, Clone)]
pub(crate) struct OptSchedule {
    pub(crate) seed: u64,
    pub(crate) stock: i64,
    pub(crate) delta: i64,
    pub(crate) at_least: Option<i64>,
    pub(crate) request_column: bool,
    pub(crate) retries: u32,
    pub(crate) submits: Vec<Submit>,
}

impl OptSchedule {
    pub(crate) fn generate(seed: u64) -> OptSchedule {
        let mut r = Rng::new(seed);
        let delta = -(r.range(1, 3) as i64);
        let mut reqs = 0usize;
        let submits = (0..r.range(2, 8))
            .map(|_| {
                let req = if reqs == 0 || r.chance(55) {
                    reqs += 1;
                    reqs - 1
                } else {
                    r.range(0, reqs as u64 - 1) as usize
                };
                Submit {
                    req,
                    stale: if r.chance(20) {
                        r.range(1, 2) as u32
                    } else {
                        0
                    },
                    end: match r.range(0, 9) {
                        0 => End::Rollback,
                        1 => End::Cut(r.range(0, 3) as u32),
                        _ => End::Commit,
                    },
                }
            })
            .collect();
        OptSchedule {
            seed,
            stock: r.range(2, 14) as i64,
            delta,
            at_least: r.chance(50).then_some(-delta),
            request_column: r.chance(70),
            retries: if r.chance(50) {
                0
            } else {
                r.range(1, 3) as u32
            },
            submits,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) expected: i64,
    pub(crate) answer: Option<Result<Versioned, String>>,
    pub(crate) committed: bool,
    /// The row's (version, stock) before and after the transaction.
    pub(crate) before: (i64, i64),
    pub(crate) after: (i64, i64),
}

pub(crate) fn run(s: &OptSchedule) -> Vec<Step> {
    with_db(|pool| async move {
        sqlx::query("INSERT INTO t_sku (sku, version, stock) VALUES ('A', 0, ?)")
            .bind(s.stock)
            .execute(&pool)
            .await
            .expect("the row");
        let mut helper = Optimistic::new("t_sku", "sku", "version")
            .and_then(|o| o.add("stock", s.delta))
            .expect("valid names")
            .retries(s.retries);
        if s.request_column {
            helper = helper.request_column("last_req").expect("a valid name");
        }
        if let Some(n) = s.at_least {
            helper = helper.at_least("stock", n).expect("a valid name");
        }
        let mut history: Vec<i64> = vec![0];
        let mut first_read: Vec<Option<i64>> = Vec::new();
        let mut steps = Vec::new();
        for sub in &s.submits {
            let row = || async {
                (
                    int(&pool, "SELECT version FROM t_sku").await,
                    int(&pool, "SELECT stock FROM t_sku").await,
                )
            };
            let before = row().await;
            if first_read.len() <= sub.req {
                first_read.resize(sub.req + 1, None);
            }
            let expected = *first_read[sub.req].get_or_insert_with(|| {
                let i = history.len().saturating_sub(1 + sub.stale as usize);
                history[i]
            });
            let req = format!("r{}", sub.req);
            let mut tx = pool.begin().await.expect("begin");
            let cut = match sub.end {
                End::Cut(n) => Some(n),
                _ => None,
            };
            let answer = cut_after(cut, helper.apply(&mut tx, Arg::Text("A"), expected, &req))
                .await
                .map(|r| r.map_err(|e| e.to_string()));
            let committed = answer.is_some() && sub.end == End::Commit;
            if committed {
                tx.commit().await.expect("commit");
            } else {
                drop(tx);
            }
            let after = row().await;
            if after.0 != before.0 {
                history.push(after.0);
            }
            steps.push(Step {
                expected,
                answer,
                committed,
                before,
                after,
            });
        }
        steps
    })
}

pub(crate) fn check(s: &OptSchedule, steps: &[Step]) -> Result<(), String> {
    let mut v = Vec::new();
    let mut applied_by: Vec<Option<usize>> = vec![None; s.submits.len()];
    for (i, (sub, st)) in s.submits.iter().zip(steps).enumerate() {
        let changed = st.after != st.before;
        if !st.committed && changed {
            v.push(format!(
                "[opt-told] submission {i} did not commit but changed the row"
            ));
        }
        if changed {
            if let Some(j) = applied_by[sub.req]
                && (s.request_column || s.retries == 0)
            {
                v.push(format!(
                    "[opt-once] request r{} applied by submission {j} and again by submission {i} (expected version {})",
                    sub.req, st.expected
                ));
            }
            applied_by[sub.req].get_or_insert(i);
        }
        let Some(Ok(answer)) = &st.answer else {
            continue;
        };
        if !st.committed {
            continue;
        }
        match answer {
            Versioned::Applied { version } => {
                if st.after != (*version, st.before.1 + s.delta) || *version != st.before.0 + 1 {
                    v.push(format!(
                        "[opt-told] submission {i} told Applied {{ version: {version} }}; row went {:?} -> {:?}",
                        st.before, st.after
                    ));
                }
            }
            other => {
                if changed {
                    v.push(format!(
                        "[opt-told] submission {i} told {other:?} but the row went {:?} -> {:?}",
                        st.before, st.after
                    ));
                }
                if matches!(other, Versioned::AlreadyApplied { .. })
                    && applied_by[sub.req].is_none_or(|j| j >= i)
                {
                    v.push(format!(
                        "[opt-already] submission {i} told AlreadyApplied, but r{} was never applied before",
                        sub.req
                    ));
                }
                if matches!(other, Versioned::PreconditionFailed { .. })
                    && s.at_least.is_none_or(|n| st.before.1 >= n)
                {
                    v.push(format!(
                        "[opt-precondition] submission {i} told PreconditionFailed with stock {}",
                        st.before.1
                    ));
                }
            }
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

pub(crate) fn dump(s: &OptSchedule, steps: &[Step]) -> String {
    let mut d = format!("seed {}: {s:#?}\nsubmissions:\n", s.seed);
    for (i, (sub, st)) in s.submits.iter().zip(steps).enumerate() {
        d.push_str(&format!(
            "  {i}: r{} expected {} {:?} -> {:?}, committed {}, row {:?} -> {:?}\n",
            sub.req, st.expected, sub.end, st.answer, st.committed, st.before, st.after
        ));
    }
    d
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = OptSchedule::generate(seed);
    let steps = run(&s);
    let verdict = check(&s, &steps);
    let outcomes = steps
        .iter()
        .map(|st| match &st.answer {
            None => "Cut".to_owned(),
            Some(Err(_)) => "Err".to_owned(),
            Some(Ok(a)) => format!("{a:?}").split(' ').next().unwrap_or("").to_owned(),
        })
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| dump(&s, &steps));
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_optimistic_seeded_schedules() {
    super::sweep(
        "optimistic",
        seed_run,
        &[
            "Applied",
            "AlreadyApplied",
            "Conflict",
            "PreconditionFailed",
            "Cut",
        ],
    );
}
