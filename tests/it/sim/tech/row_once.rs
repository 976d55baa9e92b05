//! `RowLock` and `InsertOnce` together, as the seed combines them (§3.1 and
//! §3.3: the row lock serialises the read-modify-write, the unique request
//! row deduplicates it), in a real SQLite caller database: requests deduct
//! one unit of stock under their own request id, repeats of earlier requests
//! arrive, and each transaction commits, rolls back, or has its caller
//! dropped at an await (the transaction then rolls back). The request row
//! carries a child row, inserted first in the same savepoint, so a duplicate
//! must leave no orphan.
//!
//! | invariant | statement |
//! |---|---|
//! | `once-effect` | the stock went down once per request id a committed transaction inserted, and never below zero |
//! | `once-told` | a committed `New` added its request row (and child) and nothing else; a committed `Existing` changed nothing and names the row an earlier committed transaction inserted |
//! | `once-clean` | a transaction that did not commit left the tables as they were |
//! | `once-orphans` | every child row has its request row |

use idem::db::Arg;
use idem::db::insert_once::{InsertOnce, Inserted};
use idem::db::pessimistic::RowLock;

use super::SeedRun;
use super::optimistic::End;
use super::sqlite::{cut_after, int, with_db};
use crate::sim::rng::Rng;

#[derive(Debug, Clone)]
pub(crate) struct OnceSchedule {
    pub(crate) seed: u64,
    pub(crate) stock: i64,
    /// (request id, how the transaction ends).
    pub(crate) submits: Vec<(usize, End)>,
}

impl OnceSchedule {
    pub(crate) fn generate(seed: u64) -> OnceSchedule {
        let mut r = Rng::new(seed);
        let mut reqs = 0usize;
        let submits = (0..r.range(2, 9))
            .map(|_| {
                let req = if reqs == 0 || r.chance(50) {
                    reqs += 1;
                    reqs - 1
                } else {
                    r.range(0, reqs as u64 - 1) as usize
                };
                let end = match r.range(0, 9) {
                    0 | 1 => End::Rollback,
                    2 | 3 => End::Cut(r.range(0, 5) as u32),
                    _ => End::Commit,
                };
                (req, end)
            })
            .collect();
        OnceSchedule {
            seed,
            stock: r.range(0, 5) as i64,
            submits,
        }
    }
}

/// The tables a step reads: (stock, request rows, child rows).
type Tables = (i64, i64, i64);

#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// `None`: cut off; `Some(Err)`: an error; else what insert-once found,
    /// with the request row's id and whether the stock was deducted.
    pub(crate) answer: Option<Result<Inserted<(i64, bool)>, String>>,
    pub(crate) committed: bool,
    pub(crate) before: Tables,
    pub(crate) after: Tables,
}

async fn tables(pool: &sqlx::SqlitePool) -> Tables {
    (
        int(pool, "SELECT stock FROM t_sku").await,
        int(pool, "SELECT COUNT(*) FROM t_once").await,
        int(pool, "SELECT COUNT(*) FROM t_once_item").await,
    )
}

pub(crate) fn run(s: &OnceSchedule) -> Vec<Step> {
    with_db(|pool| async move {
        sqlx::query("INSERT INTO t_sku (sku, version, stock) VALUES ('A', 0, ?)")
            .bind(s.stock)
            .execute(&pool)
            .await
            .expect("the row");
        let lock = RowLock::new("t_sku", "sku").expect("valid names");
        let once = InsertOnce::new("uk_once_k");
        let mut steps = Vec::new();
        for (req, end) in &s.submits {
            let before = tables(&pool).await;
            let k = format!("r{req}");
            let mut tx = pool.begin().await.expect("begin");
            let cut = match end {
                End::Cut(n) => Some(*n),
                _ => None,
            };
            let body = async {
                if !lock.lock(&mut tx, Arg::Text("A")).await? {
                    return Err(idem::Error::Config("the row is missing".into()));
                }
                let k = k.as_str();
                once.run(
                    &mut tx,
                    k,
                    |tx| {
                        Box::pin(async move {
                            // The child first, so a duplicate has a write
                            // for the savepoint to undo.
                            let t = tx.transaction();
                            sqlx::query("INSERT INTO t_once_item (k) VALUES (?)")
                                .bind(k)
                                .execute(&mut **t)
                                .await?;
                            let id = sqlx::query("INSERT INTO t_once (k) VALUES (?)")
                                .bind(k)
                                .execute(&mut **t)
                                .await?
                                .last_insert_rowid();
                            let n = sqlx::query(
                                "UPDATE t_sku SET stock = stock - 1 WHERE sku = 'A' AND stock >= 1",
                            )
                            .execute(&mut **t)
                            .await?
                            .rows_affected();
                            Ok((id, n == 1))
                        })
                    },
                    |tx| {
                        Box::pin(async move {
                            let id: i64 = sqlx::query_scalar("SELECT id FROM t_once WHERE k = ?")
                                .bind(k)
                                .fetch_one(&mut **tx.transaction())
                                .await?;
                            Ok((id, false))
                        })
                    },
                )
                .await
            };
            let answer = cut_after(cut, body)
                .await
                .map(|r| r.map_err(|e| e.to_string()));
            let committed = matches!(answer, Some(Ok(_))) && *end == End::Commit;
            if committed {
                tx.commit().await.expect("commit");
            } else {
                drop(tx);
            }
            let after = tables(&pool).await;
            steps.push(Step {
                answer,
                committed,
                before,
                after,
            });
        }
        steps
    })
}

pub(crate) fn check(s: &OnceSchedule, steps: &[Step]) -> Result<(), String> {
    let mut v = Vec::new();
    // The request row each request id's committed insert created.
    let mut rows: Vec<Option<i64>> = vec![None; s.submits.len()];
    let mut deducted = 0;
    for (i, ((req, _), st)) in s.submits.iter().zip(steps).enumerate() {
        if !st.committed {
            if st.after != st.before {
                v.push(format!(
                    "[once-clean] submission {i} did not commit but the tables went {:?} -> {:?}",
                    st.before, st.after
                ));
            }
            continue;
        }
        let Some(Ok(answer)) = &st.answer else {
            continue;
        };
        let (b, a) = (st.before, st.after);
        match answer {
            Inserted::New((id, took)) => {
                if let Some(first) = rows[*req] {
                    v.push(format!(
                        "[once-effect] r{req} inserted again by submission {i} (row {id}; first row {first})"
                    ));
                }
                rows[*req] = Some(*id);
                deducted += i64::from(*took);
                let want = (b.0 - i64::from(*took), b.1 + 1, b.2 + 1);
                if a != want || *took != (b.0 >= 1) {
                    v.push(format!(
                        "[once-told] submission {i} told New({id}, deducted {took}); tables went {b:?} -> {a:?}"
                    ));
                }
            }
            Inserted::Existing((id, _)) => {
                if a != b {
                    v.push(format!(
                        "[once-told] submission {i} told Existing({id}) but the tables went {b:?} -> {a:?}"
                    ));
                }
                if rows[*req] != Some(*id) {
                    v.push(format!(
                        "[once-told] submission {i} told Existing({id}) for r{req}, whose committed row is {:?}",
                        rows[*req]
                    ));
                }
            }
        }
    }
    if let Some(last) = steps.last() {
        let (stock, once, items) = last.after;
        if stock != s.stock - deducted || stock < 0 {
            v.push(format!(
                "[once-effect] stock {stock}, from {} less {deducted} deductions",
                s.stock
            ));
        }
        let inserted = rows.iter().flatten().count() as i64;
        if once != inserted || items != once {
            v.push(format!(
                "[once-orphans] {once} request rows and {items} children for {inserted} committed inserts"
            ));
        }
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = OnceSchedule::generate(seed);
    let steps = run(&s);
    let verdict = check(&s, &steps);
    let outcomes = steps
        .iter()
        .map(|st| match &st.answer {
            None => "Cut".to_owned(),
            Some(Err(_)) => "Err".to_owned(),
            Some(Ok(Inserted::New(_))) if st.committed => "New".to_owned(),
            Some(Ok(Inserted::Existing(_))) if st.committed => "Existing".to_owned(),
            Some(Ok(_)) => "RolledBack".to_owned(),
        })
        .collect();
    let dump = (verbose || verdict.is_err()).then(|| {
        let mut d = format!("seed {}: {s:#?}\nsubmissions:\n", s.seed);
        for (i, ((req, end), st)) in s.submits.iter().zip(&steps).enumerate() {
            d.push_str(&format!(
                "  {i}: r{req} {end:?} -> {:?}, committed {}, tables {:?} -> {:?}\n",
                st.answer, st.committed, st.before, st.after
            ));
        }
        d
    });
    SeedRun {
        verdict,
        dump,
        outcomes,
    }
}

#[test]
fn sim_row_lock_and_insert_once_seeded_schedules() {
    super::sweep(
        "row_once",
        seed_run,
        &["New", "Existing", "RolledBack", "Cut"],
    );
}
