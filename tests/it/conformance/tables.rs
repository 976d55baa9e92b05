//! The table set contract, run over every registered table set
//! (`idem::store::sql::table_sets()`: records, tokens, and the techniques'
//! tables) on each database: the DDL applies on fresh names, `migrate()` run
//! twice changes nothing after it, a purge deletes exactly the rows past
//! their retention and keeps the live ones, and every probe of `verify()`
//! reads its table.

use idem::db::Dialect;
use idem::store::Store;
use idem::store::sql::{Shape, SqlStore, TableNames, TableSet, table_sets};

use crate::support::fresh::{FreshDb, Pool};
use crate::support::sql::per_database;

per_database!(every_table_set_keeps_its_contract);

/// Every column and index of the tables named in `names`, as text: what an
/// unchanged schema keeps.
async fn schema(raw: &Pool, names: &TableNames) -> Vec<(String, String)> {
    let like = format!("{}%", names.records_name());
    match raw {
        Pool::Pg(_) => {
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
            let mut v = rows(raw, &cols).await;
            v.extend(rows(raw, &idx).await);
            v.sort();
            v
        }
        Pool::My(_) => {
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
            let mut v = rows(raw, &cols).await;
            v.extend(rows(raw, &idx).await);
            v.sort();
            v
        }
        Pool::Lite(_) => {
            let all = format!(
                "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE tbl_name LIKE '{like}'"
            );
            let mut v = rows(raw, &all).await;
            v.sort();
            v
        }
    }
}

/// The text rows of `sql` (every column cast to text by the query).
async fn rows(raw: &Pool, sql: &str) -> Vec<(String, String)> {
    let q = sqlx::AssertSqlSafe(sql.to_owned());
    let r = match raw {
        Pool::Pg(p) => sqlx::query_as(q).fetch_all(p).await,
        Pool::My(p) => sqlx::query_as(q).fetch_all(p).await,
        Pool::Lite(p) => sqlx::query_as(q).fetch_all(p).await,
    };
    r.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Names no table has yet, in the test's fresh database (named with its
/// schema on PostgreSQL).
fn fresh_names(db: &FreshDb, d: Dialect) -> TableNames {
    let names = TableNames::new("idem_ts").unwrap();
    match d {
        Dialect::Postgres => names.schema(db.name()).unwrap(),
        _ => names,
    }
}

/// The statement's first table (what a probe or sample names), for counts.
fn table_of(set: &dyn TableSet, d: Dialect, n: &TableNames) -> String {
    set.probes(d, n).remove(0).0
}

async fn every_table_set_keeps_its_contract(d: Dialect) {
    let db = FreshDb::new(d, "idem_ts").await;
    let names = fresh_names(&db, d);
    let raw = db.pool(2).await;
    let store = match &raw {
        Pool::Pg(p) => SqlStore::postgres(p.clone()),
        Pool::My(p) => SqlStore::mysql(p.clone()),
        Pool::Lite(p) => SqlStore::sqlite(p.clone()),
    }
    .with_tables(names.clone());
    let sets: Vec<&dyn TableSet> = table_sets().collect();
    let set_names: Vec<&str> = sets.iter().map(|s| s.name()).collect();
    assert_eq!(
        set_names,
        ["records", "tokens", "consume_log", "outbox"],
        "the registry in schema order"
    );

    // The DDL of each set applies on names no table has, and every probe
    // of `verify()` then reads its table.
    assert!(schema(&raw, &names).await.is_empty(), "fresh names");
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
    let created = schema(&raw, &names).await;
    assert!(created.len() >= sets.len(), "{created:?}");
    store.migrate().await.expect("migrate once");
    assert_eq!(schema(&raw, &names).await, created, "migrate after ddl()");
    store.migrate().await.expect("migrate twice");
    assert_eq!(schema(&raw, &names).await, created, "migrate twice");

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
        assert_eq!(
            raw.scalar(&format!("SELECT COUNT(*) FROM {t}")).await,
            2,
            "a dry run deletes nothing: {t}"
        );
    }
    let done = store.purge_report(false).await.expect("purge");
    assert_eq!(done.total(), sets.len() as u64, "{done:?}");
    for set in &sets {
        assert_eq!(done.rows(set.name()), 1, "{}: {done:?}", set.name());
        let t = table_of(*set, d, &names);
        assert_eq!(
            raw.scalar(&format!("SELECT COUNT(*) FROM {t}")).await,
            1,
            "the live row stays: {t}"
        );
    }
    let again = store.purge_report(true).await.expect("dry run");
    assert_eq!(again.total(), 0, "{again:?}");
}
