//! A fresh database per test for the outbox and consume log commands: a
//! PostgreSQL schema, a MariaDB database or a SQLite file, with idem's
//! tables (`migrate()`), a pool for the test's own business transactions
//! and statements, and the cleanup.

use std::str::FromStr;
use std::time::Duration;

use idem::sqlx;
use idem::store::sql::{SqlStore, TableNames};

pub(crate) const PG: &str = "postgres://postgres@127.0.0.1:5432/test";
pub(crate) const MY: &str = "mysql://root@127.0.0.1:3306";

/// The test's own connection to the database under test. PostgreSQL's
/// connections work in the test's schema (`search_path`), so unqualified
/// names (the default outbox and log tables) are the schema's.
pub(crate) enum Db {
    Pg(sqlx::PgPool, String),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

/// A fresh database: the test's pool, a store on it, the URL the command
/// gets, and what to remove afterwards (schema, database, file).
pub(crate) struct Fresh {
    pub(crate) db: Db,
    pub(crate) store: SqlStore,
    pub(crate) url: String,
    /// The schema (PostgreSQL), the database (MariaDB), the file (SQLite).
    pub(crate) name: String,
}

pub(crate) async fn fresh_postgres() -> Fresh {
    let schema = format!("idem_cli_{}", super::id());
    let admin = sqlx::PgPool::connect(PG).await.expect("postgres");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let opts = sqlx::postgres::PgConnectOptions::from_str(PG)
        .unwrap()
        .options([("search_path", schema.as_str())]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect_with(opts)
        .await
        .unwrap();
    let names = TableNames::default().schema(&schema).unwrap();
    let store = SqlStore::builder(PG).tables(names).connect().await.unwrap();
    store.migrate().await.unwrap();
    Fresh {
        db: Db::Pg(pool, schema.clone()),
        store,
        url: PG.to_owned(),
        name: schema,
    }
}

pub(crate) async fn fresh_mariadb() -> Fresh {
    let name = format!("idem_cli_{}", super::id());
    let admin = sqlx::MySqlPool::connect(&format!("{MY}/test"))
        .await
        .expect("mariadb");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let url = format!("{MY}/{name}");
    let pool = sqlx::MySqlPool::connect(&url).await.unwrap();
    let store = SqlStore::builder(url.clone()).connect().await.unwrap();
    store.migrate().await.unwrap();
    Fresh {
        db: Db::My(pool),
        store,
        url,
        name,
    }
}

pub(crate) async fn fresh_sqlite() -> Fresh {
    let path = std::env::temp_dir().join(format!("idem-cli-pipeline-{}.db", super::id()));
    let url = format!("sqlite:{}", path.display());
    let opts = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
        .unwrap()
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(opts)
        .await
        .unwrap();
    let store = SqlStore::builder(url.clone()).connect().await.unwrap();
    store.migrate().await.unwrap();
    Fresh {
        db: Db::Lite(pool),
        store,
        url,
        name: path.display().to_string(),
    }
}

impl Fresh {
    /// Drops the schema or database, or removes the file.
    pub(crate) async fn cleanup(self) {
        match self.db {
            Db::Pg(pool, schema) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                    .execute(&pool)
                    .await
                    .unwrap();
                pool.close().await;
            }
            Db::My(pool) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {}", self.name)))
                    .execute(&pool)
                    .await
                    .unwrap();
                pool.close().await;
            }
            Db::Lite(pool) => {
                pool.close().await;
                for ext in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{ext}", self.name));
                }
            }
        }
    }
}

impl Db {
    /// One business transaction: enqueues a message in `table`, commits;
    /// the message id.
    pub(crate) async fn enqueue(&self, table: &str, topic: &str, business_id: &str) -> String {
        self.enqueue_in(table, "", topic, business_id).await
    }

    /// [`enqueue`](Self::enqueue) under `namespace` (`OutboxTable::namespace`).
    pub(crate) async fn enqueue_in(
        &self,
        table: &str,
        namespace: &str,
        topic: &str,
        business_id: &str,
    ) -> String {
        let t = idem::outbox::OutboxTable {
            table,
            namespace,
            ..Default::default()
        };
        let payload = format!("{{\"order\":\"{business_id}\"}}");
        macro_rules! tx {
            ($begin:expr) => {{
                let mut tx = $begin.await.unwrap();
                let id = t
                    .enqueue(&mut tx, topic, business_id, payload.as_bytes())
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
                id.as_str().to_owned()
            }};
        }
        match self {
            Db::Pg(p, _) => tx!(p.begin()),
            Db::My(p) => tx!(p.begin()),
            Db::Lite(p) => tx!(p.begin_with("BEGIN IMMEDIATE")),
        }
    }

    /// Runs one statement of the test's own.
    pub(crate) async fn exec(&self, sql: &str) {
        let q = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
        let r = match self {
            Db::Pg(p, _) => q.execute(p).await.map(|_| ()),
            Db::My(p) => q.execute(p).await.map(|_| ()),
            Db::Lite(p) => q.execute(p).await.map(|_| ()),
        };
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The one text value `sql` selects.
    pub(crate) async fn text(&self, sql: &str) -> String {
        let q = sqlx::AssertSqlSafe(sql.to_owned());
        let r = match self {
            Db::Pg(p, _) => sqlx::query_scalar(q).fetch_one(p).await,
            Db::My(p) => sqlx::query_scalar(q).fetch_one(p).await,
            Db::Lite(p) => sqlx::query_scalar(q).fetch_one(p).await,
        };
        r.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// An outbox time an hour from now, on the database clock.
    pub(crate) fn in_an_hour(&self) -> &'static str {
        match self {
            Db::Pg(..) => "now() + INTERVAL '1 hour'",
            Db::My(_) => "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR",
            Db::Lite(_) => "CAST(unixepoch('subsec') * 1000000 AS INTEGER) + 3600000000",
        }
    }

    /// A relay's owner value (16 bytes).
    pub(crate) fn an_owner(&self) -> &'static str {
        match self {
            Db::Pg(..) => "decode('00112233445566778899aabbccddeeff', 'hex')",
            Db::My(_) => "UNHEX('00112233445566778899aabbccddeeff')",
            Db::Lite(_) => "X'00112233445566778899aabbccddeeff'",
        }
    }

    /// `state/attempts/owner/due` of an outbox row as text: `owner` is
    /// `none` or `set`, `due` is `due` (now or earlier) or `later`.
    pub(crate) fn row_summary(&self) -> &'static str {
        match self {
            Db::Pg(..) => {
                "state || '/' || attempts || '/' || CASE WHEN owner IS NULL THEN 'none' ELSE 'set' END \
                 || '/' || CASE WHEN due_at <= now() THEN 'due' ELSE 'later' END"
            }
            Db::My(_) => {
                "CONCAT(state, '/', attempts, '/', IF(owner IS NULL, 'none', 'set'), '/', \
                 IF(due_at <= UTC_TIMESTAMP(6), 'due', 'later'))"
            }
            Db::Lite(_) => {
                "state || '/' || attempts || '/' || CASE WHEN owner IS NULL THEN 'none' ELSE 'set' END \
                 || '/' || CASE WHEN due_at <= CAST(unixepoch('subsec') * 1000000 AS INTEGER) \
                 THEN 'due' ELSE 'later' END"
            }
        }
    }
}

/// Runs `story` on `f`, then cleans up whether it passed or panicked (the
/// panic is passed on afterwards).
pub(crate) async fn cleaned_up(f: Fresh, story: impl AsyncFnOnce(&Fresh)) {
    let out = CatchUnwind(Box::pin(story(&f))).await;
    f.cleanup().await;
    if let Err(panic) = out {
        std::panic::resume_unwind(panic);
    }
}

/// A future's panic as a value.
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}
