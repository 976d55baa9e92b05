//! The statements a state transition sends inside the caller's transaction,
//! pinned per dialect (read from sqlx's statement log). The applied path takes
//! a savepoint and leaves it to the transaction's end (no `RELEASE`); a
//! failing body rolls back to it: the state is unchanged, the body's rows are
//! gone, the caller's earlier row stays and the transaction is usable.
//! Without the savepoint (`savepoint(false)`) the applied path is the
//! `UPDATE` alone, and a failing body is followed by the compensating
//! `UPDATE` that sets the row back; the caller then rolls back.

use idem::Transition;

use crate::state::order::{AppError, OrderStatus};
use crate::support::sql_log::SqlLog;

macro_rules! counted {
    ($name:ident, $db:ty, $fixture:path, $pg:expr, $savepoint:expr) => {
        #[tokio::test]
        async fn $name() {
            type Db = $db;
            fn q(sql: &str) -> sqlx::AssertSqlSafe<String> {
                crate::tx::support::sql_for($pg, sql)
            }
            let (pool, _place) = $fixture().await;
            sqlx::query(q("INSERT INTO t_order (order_no, status) VALUES (?, ?)"))
                .bind("s-1")
                .bind(OrderStatus::WaitPay)
                .execute(&pool)
                .await
                .unwrap();
            let no = "s-1".to_owned();
            let (log, _guard) = SqlLog::start();
            async fn paid(
                tx: &mut sqlx::Transaction<'static, Db>,
                no: &str,
                fail: bool,
            ) -> Result<Transition<u8>, AppError> {
                idem::state::transition(&mut *tx, "t_order", "order_no", &no)
                    .from(OrderStatus::WaitPay)
                    .to(OrderStatus::PaySuccess)
                    .savepoint($savepoint)
                    .run(async move |tx| {
                        sqlx::query(q("INSERT INTO t_note (id) VALUES (?)"))
                            .bind("body")
                            .execute(&mut **tx)
                            .await?;
                        if fail {
                            return Err(AppError::Body);
                        }
                        Ok(1u8)
                    })
                    .await
            }
            let mut tx = pool.begin().await.unwrap();
            sqlx::query(q("INSERT INTO t_note (id) VALUES (?)"))
                .bind("caller")
                .execute(&mut *tx)
                .await
                .unwrap();
            let _ = log.take();
            let r: Result<Transition<u8>, AppError> = paid(&mut tx, &no, true).await;
            assert!(matches!(r, Err(AppError::Body)), "{r:?}");
            let failed = log.take();
            if $savepoint {
                sqlx::query(q("INSERT INTO t_note (id) VALUES (?)"))
                    .bind("after")
                    .execute(&mut *tx)
                    .await
                    .expect("the caller's transaction is usable after a failing body");
            } else {
                // The body's row is still in the transaction: roll back.
                tx.rollback().await.unwrap();
                tx = pool.begin().await.unwrap();
            }
            let _ = log.take();
            let r: Result<Transition<u8>, AppError> = paid(&mut tx, &no, false).await;
            assert_eq!(r.unwrap(), Transition::Applied(1));
            let applied = log.take();
            let r: Result<Transition<u8>, AppError> = paid(&mut tx, &no, false).await;
            assert!(!r.unwrap().is_applied());
            let repeat = log.take();
            tx.commit().await.unwrap();
            drop(_guard);
            let notes: i64 = sqlx::query_scalar(q("SELECT COUNT(*) FROM t_note"))
                .fetch_one(&pool)
                .await
                .unwrap();
            let expected = if $savepoint { 3 } else { 1 };
            assert_eq!(notes, expected, "the caller's rows and the applied body's");
            println!(
                "transition {}: applied {applied:?}, repeat {repeat:?}, failed body {failed:?}",
                stringify!($name)
            );
            let words = |w: &[&str]| {
                let first = if $savepoint {
                    &["SAVEPOINT"][..]
                } else {
                    &[][..]
                };
                first
                    .iter()
                    .chain(w)
                    .map(|s| (*s).to_owned())
                    .collect::<Vec<_>>()
            };
            assert_eq!(applied, words(&["UPDATE", "INSERT"]), "applied");
            assert_eq!(repeat, words(&["UPDATE", "SELECT"]), "already applied");
            let undo: &[&str] = if $savepoint {
                &["UPDATE", "INSERT", "ROLLBACK", "RELEASE"]
            } else {
                &["UPDATE", "INSERT", "UPDATE"]
            };
            assert_eq!(failed, words(undo), "failed body");
        }
    };
}

counted!(
    transition_statements_postgres,
    sqlx::Postgres,
    crate::state::support::pg,
    true,
    true
);
counted!(
    transition_statements_mariadb,
    sqlx::MySql,
    crate::state::support::mysql,
    false,
    true
);
counted!(
    transition_statements_without_savepoint_postgres,
    sqlx::Postgres,
    crate::state::support::pg,
    true,
    false
);
counted!(
    transition_statements_without_savepoint_mariadb,
    sqlx::MySql,
    crate::state::support::mysql,
    false,
    false
);
