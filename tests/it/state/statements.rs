//! The statements a state transition sends inside the caller's transaction,
//! pinned per dialect (read from sqlx's statement log). The applied path takes
//! a savepoint and leaves it to the transaction's end (no `RELEASE`); a
//! failing body rolls back to it: the state is unchanged, the body's rows are
//! gone, the caller's earlier row stays and the transaction is usable.

use idem::Transition;

use crate::state::order::{AppError, OrderStatus};
use crate::support::sql_log::SqlLog;

macro_rules! counted {
    ($name:ident, $db:ty, $fixture:path, $pg:expr) => {
        #[tokio::test]
        async fn $name() {
            type Db = $db;
            fn q(sql: &str) -> sqlx::AssertSqlSafe<String> {
                sqlx::AssertSqlSafe(if $pg {
                    crate::tx::support::pg_sql(sql)
                } else {
                    sql.to_owned()
                })
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
            sqlx::query(q("INSERT INTO t_note (id) VALUES (?)"))
                .bind("after")
                .execute(&mut *tx)
                .await
                .expect("the caller's transaction is usable after a failing body");
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
            assert_eq!(notes, 3, "the caller's two rows and the applied body's");
            println!(
                "transition {}: applied {applied:?}, repeat {repeat:?}, failed body {failed:?}",
                stringify!($name)
            );
            let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
            assert_eq!(
                applied,
                words(&["SAVEPOINT", "UPDATE", "INSERT"]),
                "applied"
            );
            assert_eq!(
                repeat,
                words(&["SAVEPOINT", "UPDATE", "SELECT"]),
                "already applied"
            );
            assert_eq!(
                failed,
                words(&["SAVEPOINT", "UPDATE", "INSERT", "ROLLBACK", "RELEASE"]),
                "failed body"
            );
        }
    };
}

counted!(
    transition_statements_postgres,
    sqlx::Postgres,
    crate::state::support::pg,
    true
);
counted!(
    transition_statements_mariadb,
    sqlx::MySql,
    crate::state::support::mysql,
    false
);
