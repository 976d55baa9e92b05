//! Deadlocks and lock-wait timeouts are part of normal operation under
//! concurrency: InnoDB picks a victim among concurrent `INSERT … ON DUPLICATE
//! KEY UPDATE`s of one key (1213) even when the statements are well ordered,
//! PostgreSQL aborts serialization failures (40001) and deadlocks (40P01), and
//! SQLite answers busy (5, 517) past its `busy_timeout`. The statement that lost
//! did nothing, so running it again is safe; every SQL piece retries through
//! [`retry_conflicts`] rather than growing its own loop.

use std::time::Duration;

/// Whether an error is a deadlock or lock timeout the statement may simply retry:
/// SQLSTATE 40001 (MariaDB/MySQL deadlock 1213, PostgreSQL serialization
/// failure), 40P01 (PostgreSQL deadlock), MariaDB's lock-wait timeout (1205,
/// SQLSTATE HY000: recognised by its message), SQLite busy (5, 517).
pub fn is_retryable_conflict(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    let code = db.code();
    matches!(code.as_deref(), Some("40001" | "40P01" | "5" | "517"))
        || db.message().contains("Deadlock found")
        || db.message().starts_with("Lock wait timeout exceeded")
}

/// Attempts after the first one before a conflict is returned to the caller.
pub const CONFLICT_RETRIES: u32 = 8;

/// Runs `f` again after short, growing, jittered pauses while it fails with a
/// retryable conflict ([`is_retryable_conflict`]), at most [`CONFLICT_RETRIES`]
/// times; any other result is returned as is. `f` must be safe to repeat: a
/// whole transaction, or one autocommit statement.
pub async fn retry_conflicts<T, F, Fut>(mut f: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let mut attempt = 0u32;
    loop {
        match f().await {
            Err(e) if is_retryable_conflict(&e) && attempt < CONFLICT_RETRIES => {
                attempt += 1;
                pause(attempt).await;
            }
            r => return r,
        }
    }
}

/// The pause before retry number `attempt` (1-based): growing, and jittered
/// by the clock's low bits so two victims of one deadlock do not collide
/// again in step.
pub(crate) async fn pause(attempt: u32) {
    let jitter = super::time::unix_micros() % 1_000;
    tokio::time::sleep(Duration::from_micros(500 * u64::from(attempt) + jitter)).await;
}

/// A real MariaDB deadlock is recognised as retryable (the class of error
/// `retry_conflicts` repeats). Needs the MariaDB of the test machine
/// (`IDEM_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`).
#[cfg(all(test, feature = "mysql"))]
mod mariadb_deadlock {
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deadlock_victim_is_retryable() {
        let url = std::env::var("IDEM_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into());
        let pool = sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(3)
            .connect(&url)
            .await
            .unwrap_or_else(|e| panic!("MariaDB at {url} is required for this test: {e}"));
        let t = format!("idem_deadlock_{}", uuid::Uuid::new_v4().simple());
        let run = |sql: String| {
            let pool = pool.clone();
            async move {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .map(drop)
            }
        };
        run(format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"
        ))
        .await
        .unwrap();
        run(format!("INSERT INTO {t} VALUES (1, 0), (2, 0)"))
            .await
            .unwrap();
        let (mut a, mut b) = (pool.begin().await.unwrap(), pool.begin().await.unwrap());
        let upd =
            |id: i32| sqlx::AssertSqlSafe(format!("UPDATE {t} SET v = v + 1 WHERE id = {id}"));
        sqlx::query(upd(1)).execute(&mut *a).await.unwrap();
        sqlx::query(upd(2)).execute(&mut *b).await.unwrap();
        // Each now wants the other's row: InnoDB picks a victim (1213).
        let (ra, rb) = tokio::join!(sqlx::query(upd(2)).execute(&mut *a), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            sqlx::query(upd(1)).execute(&mut *b).await
        });
        let victim = ra
            .err()
            .or(rb.err())
            .expect("one transaction is the deadlock victim");
        assert!(super::is_retryable_conflict(&victim), "{victim:?}");
        drop((a, b));
        run(format!("DROP TABLE {t}")).await.unwrap();
    }
}
