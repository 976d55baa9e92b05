//! A failing transition body, with and without the savepoint, on each
//! database: the body fails with its own error or with a failed SQL
//! statement, then the caller goes on and commits, or rolls back.
//!
//! With the savepoint: the row keeps its state, the body's rows go, the
//! caller's row stays and the transaction is usable. Without it: the row is
//! set back to its source state (and version) if the transaction still takes
//! statements; the body's rows are the caller's to roll back (on PostgreSQL a
//! failed statement leaves the transaction aborted). Either way the state is
//! never moved without its body, and a retry applies the body exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::Transition;

use crate::state::order::{AppError, OrderStatus};
use crate::tx::support::{Fail, savepoint_cases, sql_for};

macro_rules! modes {
    ($name:ident, $db:ty, $fixture:path, $pg:expr) => {
        #[tokio::test]
        async fn $name() {
            type Db = $db;
            fn q(sql: &str) -> sqlx::AssertSqlSafe<String> {
                sql_for($pg, sql)
            }
            async fn paid(
                tx: &mut sqlx::Transaction<'static, Db>,
                savepoint: bool,
                fail: Fail,
                runs: &AtomicUsize,
            ) -> Result<Transition<u8>, AppError> {
                let no = "m-1".to_owned();
                idem::state::transition(&mut *tx, "t_order", "order_no", &no)
                    .from(OrderStatus::WaitPay)
                    .to(OrderStatus::PaySuccess)
                    .version_column("version")
                    .savepoint(savepoint)
                    .run(async move |tx| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        let note = q("INSERT INTO t_note (id) VALUES (?)");
                        sqlx::query(note).bind("body").execute(&mut **tx).await?;
                        match fail {
                            Fail::No => Ok(1u8),
                            Fail::Rust => Err(AppError::Body),
                            Fail::Sql => {
                                // Refused: a duplicate key.
                                let note = q("INSERT INTO t_note (id) VALUES (?)");
                                sqlx::query(note).bind("caller").execute(&mut **tx).await?;
                                Ok(0u8)
                            }
                        }
                    })
                    .await
            }
            for (savepoint, fail, commit) in savepoint_cases() {
                let what = format!("savepoint={savepoint} {fail:?} commit={commit}");
                let (pool, _place) = $fixture().await;
                let order = q("INSERT INTO t_order (order_no, status) VALUES (?, ?)");
                sqlx::query(order)
                    .bind("m-1")
                    .bind(OrderStatus::WaitPay)
                    .execute(&pool)
                    .await
                    .unwrap();
                let runs = AtomicUsize::new(0);
                let mut tx = pool.begin().await.unwrap();
                let note = q("INSERT INTO t_note (id) VALUES (?)");
                sqlx::query(note)
                    .bind("caller")
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                let r = paid(&mut tx, savepoint, fail, &runs).await;
                match fail {
                    Fail::Rust => {
                        assert!(matches!(r, Err(AppError::Body)), "{what}: {r:?}")
                    }
                    _ => assert!(matches!(r, Err(AppError::Db(_))), "{what}: {r:?}"),
                }
                let aborted = !savepoint && matches!(fail, Fail::Sql) && $pg;
                let mut committed = false;
                if commit {
                    let note = q("INSERT INTO t_note (id) VALUES (?)");
                    let next = sqlx::query(note).bind("after").execute(&mut *tx).await;
                    assert_eq!(next.is_err(), aborted, "{what}: {next:?}");
                    committed = next.is_ok();
                }
                match committed {
                    true => tx.commit().await.unwrap(),
                    false => tx.rollback().await.unwrap(),
                }
                let status: String =
                    sqlx::query_scalar(q("SELECT status FROM t_order WHERE order_no = ?"))
                        .bind("m-1")
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                assert_eq!(status, "WAIT_PAY", "{what}: the state did not move");
                let version: i64 =
                    sqlx::query_scalar(q("SELECT version FROM t_order WHERE order_no = ?"))
                        .bind("m-1")
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                assert_eq!(version, 0, "{what}: the version is back");
                let body: i64 = sqlx::query_scalar(q("SELECT COUNT(*) FROM t_note WHERE id = ?"))
                    .bind("body")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                // Without the savepoint the body's row commits with a
                // caller that commits (it must roll back instead).
                let kept = committed && !savepoint;
                assert_eq!(body, i64::from(kept), "{what}: the body's row");
                if kept {
                    let del = q("DELETE FROM t_note WHERE id = ?");
                    sqlx::query(del).bind("body").execute(&pool).await.unwrap();
                }

                // The retry applies once; its repeat is already applied.
                runs.store(0, Ordering::SeqCst);
                let mut tx = pool.begin().await.unwrap();
                let r = paid(&mut tx, savepoint, Fail::No, &runs).await;
                assert_eq!(r.unwrap(), Transition::Applied(1), "{what}");
                tx.commit().await.unwrap();
                let mut tx = pool.begin().await.unwrap();
                let r = paid(&mut tx, savepoint, Fail::No, &runs).await;
                assert!(!r.unwrap().is_applied(), "{what}");
                tx.commit().await.unwrap();
                assert_eq!(runs.load(Ordering::SeqCst), 1, "{what}: the retry ran once");
            }
        }
    };
}

modes!(
    failing_transition_with_and_without_savepoint_postgres,
    sqlx::Postgres,
    crate::state::support::pg,
    true
);
modes!(
    failing_transition_with_and_without_savepoint_mariadb,
    sqlx::MySql,
    crate::state::support::mysql,
    false
);
modes!(
    failing_transition_with_and_without_savepoint_sqlite,
    sqlx::Sqlite,
    crate::state::support::sqlite,
    false
);
