//! The table set contract, run over every registered table set
//! (`idem::store::sql::table_sets()`: records, tokens, and the techniques'
//! tables) on each database: the DDL applies on fresh names, `migrate()` run
//! twice changes nothing after it, a purge deletes exactly the rows past
//! their retention and keeps the live ones, and every probe of `verify()`
//! reads its table.

use idem::db::Dialect;
use idem::store::Store;
use idem::store::sql::{Shape, SqlStore, TableNames, TableSet, table_sets};

use crate::support::sql::{mysql_url, per_database, pg_url, suffix};

per_database!(every_table_set_keeps_its_contract);

/// A pool on the fixture's database, for reads the store does not offer.
enum Raw {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

impl Raw {
    /// A pool on a place of its own: a fresh schema on PostgreSQL (`names`
    /// carry it), the test database on MariaDB (`names` are fresh), a fresh
    /// SQLite file.
    async fn new(d: Dialect, names: &TableNames) -> Raw {
        match d {
            Dialect::Postgres => {
                let p = sqlx::PgPool::connect(&pg_url()).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL at {} is required for this test: {e}", pg_url())
                });
                let s = names.schema_name().expect("a schema on PostgreSQL");
                let raw = Raw::Pg(p);
                raw.exec(&format!("CREATE SCHEMA {s}")).await;
                raw
            }
            Dialect::MySql => Raw::My(sqlx::MySqlPool::connect(&mysql_url()).await.unwrap_or_else(
                |e| panic!("MariaDB at {} is required for this test: {e}", mysql_url()),
            )),
            _ => {
                let opts = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(lite_file(names))
                    .create_if_missing(true)
                    .busy_timeout(std::time::Duration::from_secs(5));
                Raw::Lite(sqlx::SqlitePool::connect_with(opts).await.unwrap())
            }
        }
    }

    /// A store of `d` on the same place.
    async fn store(&self, names: &TableNames) -> SqlStore {
        let store = match self {
            Raw::Pg(p) => SqlStore::postgres(p.clone()),
            Raw::My(p) => SqlStore::mysql(p.clone()),
            Raw::Lite(_) => SqlStore::open(lite_file(names)).await.unwrap(),
        };
        store.with_tables(names.clone())
    }

    /// Drops what the test created.
    async fn drop_all(&self, names: &TableNames) {
        match self {
            Raw::Pg(_) => {
                let s = names.schema_name().expect("a schema");
                self.exec(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"))
                    .await;
            }
            Raw::My(_) => {
                let mut all: Vec<String> = names.all().map(|(_, n)| n.to_owned()).collect();
                all.push(format!("{}_order_locks", names.outbox_name()));
                self.exec(&format!("DROP TABLE IF EXISTS {}", all.join(", ")))
                    .await;
            }
            Raw::Lite(p) => {
                p.close().await;
                let f = lite_file(names);
                for end in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{end}", f.display()));
                }
            }
        }
    }

    async fn exec(&self, sql: &str) {
        let q = sqlx::AssertSqlSafe(sql.to_owned());
        let r = match self {
            Raw::Pg(p) => sqlx::raw_sql(q).execute(p).await.map(drop),
            Raw::My(p) => sqlx::raw_sql(q).execute(p).await.map(drop),
            Raw::Lite(p) => sqlx::raw_sql(q).execute(p).await.map(drop),
        };
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The text rows of `sql` (every column cast to text by the query).
    async fn rows(&self, sql: &str) -> Vec<(String, String)> {
        let q = sqlx::AssertSqlSafe(sql.to_owned());
        let r = match self {
            Raw::Pg(p) => sqlx::query_as(q).fetch_all(p).await,
            Raw::My(p) => sqlx::query_as(q).fetch_all(p).await,
            Raw::Lite(p) => sqlx::query_as(q).fetch_all(p).await,
        };
        r.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    async fn count(&self, table: &str) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let q = sqlx::AssertSqlSafe(sql.clone());
        let r: Result<(i64,), _> = match self {
            Raw::Pg(p) => sqlx::query_as(q).fetch_one(p).await,
            Raw::My(p) => sqlx::query_as(q).fetch_one(p).await,
            Raw::Lite(p) => sqlx::query_as(q).fetch_one(p).await,
        };
        r.unwrap_or_else(|e| panic!("{sql}: {e}")).0
    }

    /// Every column and index of the tables named in `names`, as text: what
    /// an unchanged schema keeps.
    async fn schema(&self, names: &TableNames) -> Vec<(String, String)> {
        let like = format!("{}%", names.records_name());
        match self {
            Raw::Pg(_) => {
                let s = names.schema_name().expect("a schema on PostgreSQL");
                let cols = format!(
                    "SELECT table_name::TEXT, column_name::TEXT || ' ' || data_type::TEXT || ' ' || \
                     is_nullable::TEXT || ' ' || COALESCE(column_default, '') \
                     FROM information_schema.columns \
                     WHERE table_schema = '{s}' AND table_name LIKE '{like}'"
                );
                let idx = format!(
                    "SELECT tablename::TEXT, indexdef::TEXT FROM pg_indexes \
                     WHERE schemaname = '{s}' AND tablename LIKE '{like}'"
                );
                let mut v = self.rows(&cols).await;
                v.extend(self.rows(&idx).await);
                v.sort();
                v
            }
            Raw::My(_) => {
                let cols = format!(
                    "SELECT CAST(table_name AS CHAR), CAST(CONCAT(column_name, ' ', column_type, ' ', \
                     is_nullable, ' ', COALESCE(column_default, '')) AS CHAR) \
                     FROM information_schema.columns \
                     WHERE table_schema = DATABASE() AND table_name LIKE '{like}'"
                );
                let idx = format!(
                    "SELECT CAST(table_name AS CHAR), CAST(CONCAT(index_name, ' ', seq_in_index, ' ', \
                     column_name, ' ', non_unique) AS CHAR) FROM information_schema.statistics \
                     WHERE table_schema = DATABASE() AND table_name LIKE '{like}'"
                );
                let mut v = self.rows(&cols).await;
                v.extend(self.rows(&idx).await);
                v.sort();
                v
            }
            Raw::Lite(_) => {
                let all = format!(
                    "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE tbl_name LIKE '{like}'"
                );
                let mut v = self.rows(&all).await;
                v.sort();
                v
            }
        }
    }
}

/// Names no table has yet, under a fresh schema on PostgreSQL.
fn fresh_names(d: Dialect) -> TableNames {
    let base = format!("idem_c{}", &suffix()[..8]);
    let names = TableNames::new(&base).unwrap();
    match d {
        Dialect::Postgres => names.schema(&base).unwrap(),
        _ => names,
    }
}

/// The SQLite file of `names`, in the temporary directory.
fn lite_file(names: &TableNames) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{}.db", names.records_name()))
}

/// The statement's first table (what a probe or sample names), for counts.
fn table_of(set: &dyn TableSet, d: Dialect, n: &TableNames) -> String {
    set.probes(d, n).remove(0).0
}

async fn every_table_set_keeps_its_contract(d: Dialect) {
    let names = fresh_names(d);
    let raw = Raw::new(d, &names).await;
    let store = raw.store(&names).await;
    let sets: Vec<&dyn TableSet> = table_sets().collect();
    let set_names: Vec<&str> = sets.iter().map(|s| s.name()).collect();
    assert_eq!(
        set_names,
        ["records", "tokens", "consume_log", "outbox"],
        "the registry in schema order"
    );

    // The DDL of each set applies on names no table has, and every probe
    // of `verify()` then reads its table.
    assert!(raw.schema(&names).await.is_empty(), "fresh names");
    for set in &sets {
        for s in set.ddl(d, &names, Shape::Current) {
            raw.exec(&s).await;
        }
        let probes = set.probes(d, &names);
        assert!(!probes.is_empty(), "{} probes its tables", set.name());
        for (table, probe) in probes {
            assert!(
                names
                    .all()
                    .any(|(_, n)| table.ends_with(n) || table.contains(n)),
                "{} probes {table}, a table of its names",
                set.name()
            );
            raw.exec(&probe).await;
        }
    }
    store.verify().await.expect("verify after the DDL");

    // `migrate()` on the current shape changes nothing, twice.
    let created = raw.schema(&names).await;
    assert!(created.len() >= sets.len(), "{created:?}");
    store.migrate().await.expect("migrate once");
    assert_eq!(raw.schema(&names).await, created, "migrate after ddl()");
    store.migrate().await.expect("migrate twice");
    assert_eq!(raw.schema(&names).await, created, "migrate twice");

    // A purge deletes each set's expired row, and only that one.
    for set in &sets {
        for row in set.samples(d, &names) {
            raw.exec(&row).await;
        }
    }
    let dry = store.purge_report(true).await.expect("dry run");
    for set in &sets {
        assert_eq!(dry.rows(set.name()), 1, "{}: {dry:?}", set.name());
        let t = table_of(*set, d, &names);
        assert_eq!(raw.count(&t).await, 2, "a dry run deletes nothing: {t}");
    }
    let done = store.purge_report(false).await.expect("purge");
    assert_eq!(done.total(), sets.len() as u64, "{done:?}");
    for set in &sets {
        assert_eq!(done.rows(set.name()), 1, "{}: {done:?}", set.name());
        let t = table_of(*set, d, &names);
        assert_eq!(raw.count(&t).await, 1, "the live row stays: {t}");
    }
    let again = store.purge_report(true).await.expect("dry run");
    assert_eq!(again.total(), 0, "{again:?}");
    drop(store);
    raw.drop_all(&names).await;
}
