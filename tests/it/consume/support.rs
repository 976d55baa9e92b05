//! Fixtures for the consume log tests: a fresh PostgreSQL schema (as the
//! connections' `search_path`), a fresh MariaDB database, or a SQLite temp
//! file, holding idem's tables (`migrate()`, so the default
//! `idem_consume_log` too) and a business table `refunds` with no unique key
//! of its own, so only the consume log can stop a duplicate effect. Dropped
//! with the fixture; a missing server fails the test loudly.

use idem::db::Dialect;

use idem::store::sql::SqlStore;

use crate::support::fresh::FreshDb;
pub(crate) use crate::support::fresh::Pool;

/// The business database of one test.
#[derive(Debug)]
pub(crate) struct LogDb {
    pub(crate) pool: Pool,
    pub(crate) store: SqlStore,
    db: FreshDb,
}

const REFUNDS: &str = "CREATE TABLE refunds (order_no VARCHAR(64) NOT NULL, msg_id VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL)";

impl LogDb {
    pub(crate) async fn new(dialect: Dialect) -> LogDb {
        Self::with_pool(dialect, 4).await
    }

    /// With `max` pooled connections.
    pub(crate) async fn with_pool(dialect: Dialect, max: u32) -> LogDb {
        let db = FreshDb::new(dialect, "idem_c").await;
        let pool = db.pool(max).await;
        let store = match &pool {
            Pool::Pg(p) => SqlStore::postgres(p.clone()),
            Pool::My(p) => SqlStore::mysql(p.clone()),
            Pool::Lite(p) => SqlStore::sqlite(p.clone()),
        };
        store.migrate().await.expect("migrate");
        let db = LogDb { pool, store, db };
        db.exec(REFUNDS).await;
        db
    }

    /// The schema of a PostgreSQL fixture, for a child process to attach to.
    pub(crate) fn schema(&self) -> &str {
        self.db.name()
    }

    /// Attaches to the schema of another process's fixture (no cleanup).
    pub(crate) async fn attach_pg(schema: &str, max: u32) -> sqlx::PgPool {
        crate::support::fresh::pg_on(schema, max).await
    }

    pub(crate) fn pg(&self) -> &sqlx::PgPool {
        match &self.pool {
            Pool::Pg(p) => p,
            _ => panic!("not PostgreSQL"),
        }
    }

    pub(crate) async fn exec(&self, sql: &str) {
        self.pool.exec(sql).await;
    }

    pub(crate) async fn scalar(&self, sql: &str) -> i64 {
        self.pool.scalar(sql).await
    }

    /// Business rows in `refunds`.
    pub(crate) async fn refunds(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM refunds").await
    }

    /// Order numbers refunded more than once.
    pub(crate) async fn double_refunds(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM (SELECT order_no FROM refunds WHERE kind = 'refund' GROUP BY order_no HAVING COUNT(*) > 1) d")
            .await
    }

    /// Rows in the consume log.
    pub(crate) async fn log_rows(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM idem_consume_log").await
    }
}
