//! `idem` on PostgreSQL (a fresh schema), MariaDB (a fresh database) and
//! SQLite (a fresh file), each created from the checked-in migration files,
//! applied as one script the way `sqlx migrate` applies it, and dropped at
//! the end.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idem::sqlx;
use idem::store::sql::{SqlStore, TableNames};
use support::{call, crashed_claim_story, handle, id, idem};

const PG: &str = "postgres://postgres@127.0.0.1:5432/test";
const MY: &str = "mysql://root@127.0.0.1:3306";

/// Every migration file of `dialect`, in order, as one script.
fn migration(dialect: &str) -> String {
    let dir = format!("{}/../migrations/{dialect}", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
        .collect()
}

/// Everything but the set-up: the crashed claim, purge, stats, verify.
/// `open` makes a store on the test's tables: one for the process that
/// crashes, one for the rest.
async fn story<F: std::future::Future<Output = SqlStore>>(open: impl Fn() -> F, args: &[&str]) {
    let store: Arc<dyn idem::Store> = Arc::new(open().await);
    let ok = idem(&[&["verify"], args].concat());
    assert_eq!(ok.code, 0, "{}{}", ok.out, ok.err);
    let ns = format!("cli{}", id());
    let h = handle(Arc::clone(&store), &ns);
    let dead = handle(Arc::new(open().await), &ns);
    crashed_claim_story(dead, &h, args).await;
    support::forget_if_story(&*store, &format!("{ns}:forget-if:1")).await;

    // Purge removes exactly the expired rows: two of three records.
    for (part, ttl) in [("a", 2), ("b", 2), ("c", 600)] {
        assert!(call(&h, "purge-me", part, Duration::from_secs(ttl), 1).await);
    }
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    let stats = idem(&[&["stats", "--json", "-n", &ns], args].concat()).json();
    let purge_me = stats["scenes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scene"] == "purge-me")
        .cloned();
    let purge_me = purge_me.expect("the scene is counted");
    assert_eq!(
        (purge_me["done"].as_u64(), purge_me["expired"].as_u64()),
        (Some(1), Some(2))
    );
    // With -n, another namespace's expired rows are neither counted nor deleted.
    let other = idem(&[&["purge", "--json", "-n", "not-this-one"], args].concat()).json();
    assert_eq!(other["records"].as_u64(), Some(0), "{other}");
    let mine = idem(&[&["purge", "--dry-run", "--json", "-n", &ns], args].concat()).json();
    assert_eq!(mine["records"].as_u64(), Some(2), "{mine}");
    let dry = idem(&[&["purge", "--dry-run", "--json"], args].concat()).json();
    assert_eq!(
        (dry["records"].as_u64(), dry["dry_run"].as_bool()),
        (Some(2), Some(true)),
        "{dry}"
    );
    let done = idem(&[&["purge", "--json"], args].concat()).json();
    assert_eq!(
        (done["records"].as_u64(), done["total"].as_u64()),
        (Some(2), Some(2)),
        "{done}"
    );
    let again = idem(&[&["purge", "--json"], args].concat()).json();
    assert_eq!(again["total"].as_u64(), Some(0));
    let human = idem(&[&["stats", "-n", &ns], args].concat());
    assert!(human.out.contains("purge-me"), "{}", human.out);

    // A missing backstop constraint, then a missing table: verify exits 1.
    let missing = idem(&[&["verify", "--backstop", "uk_not_there"], args].concat());
    assert_eq!(missing.code, 1, "{}{}", missing.out, missing.err);
    assert!(missing.out.contains("uk_not_there"), "{}", missing.out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_in_a_fresh_schema() {
    let schema = format!("idem_cli_{}", id());
    let pool = sqlx::PgPool::connect(PG).await.expect("postgres");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&pool)
        .await
        .unwrap();
    let mut con = pool.acquire().await.unwrap();
    let script = format!("SET search_path TO {schema};\n{}", migration("postgres"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(script))
        .execute(&mut *con)
        .await
        .expect("migration applies");
    drop(con);
    let names = TableNames::default().schema(&schema).unwrap();
    let open = || async {
        SqlStore::builder(PG)
            .tables(names.clone())
            .connect()
            .await
            .unwrap()
    };
    let args = ["--store", PG, "--schema", &schema];
    story(open, &args).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TABLE {schema}.idem_tokens"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let broken = idem(&[&["verify", "--json"], &args[..]].concat());
    assert_eq!(broken.code, 1, "{}{}", broken.out, broken.err);
    assert!(
        broken.json()["error"]
            .as_str()
            .unwrap()
            .contains("idem_tokens"),
        "{}",
        broken.out
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&pool)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_in_a_fresh_database() {
    let db = format!("idem_cli_{}", id());
    let admin = sqlx::MySqlPool::connect(&format!("{MY}/test"))
        .await
        .expect("mariadb");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&admin)
        .await
        .unwrap();
    let url = format!("{MY}/{db}");
    let pool = sqlx::MySqlPool::connect(&url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(migration("mysql")))
        .execute(&pool)
        .await
        .expect("migration applies");
    let open = || async { SqlStore::builder(url.clone()).connect().await.unwrap() };
    let args = ["--store", &url];
    story(open, &args).await;
    sqlx::raw_sql("DROP TABLE idem_consume_log")
        .execute(&pool)
        .await
        .unwrap();
    let broken = idem(&[&["verify"], &args[..]].concat());
    assert_eq!(broken.code, 1, "{}{}", broken.out, broken.err);
    assert!(broken.out.contains("idem_consume_log"), "{}", broken.out);
    pool.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {db}")))
        .execute(&admin)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_in_a_fresh_file() {
    let path = std::env::temp_dir().join(format!("idem-cli-{}.db", id()));
    let url = format!("sqlite:{}", path.display());
    let pool = sqlx::SqlitePool::connect(&format!("{url}?mode=rwc"))
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(migration("sqlite")))
        .execute(&pool)
        .await
        .expect("migration applies");
    let open = || async { SqlStore::builder(url.clone()).connect().await.unwrap() };
    let args = ["--store", &url];
    story(open, &args).await;
    sqlx::raw_sql("DROP TABLE idem_fences")
        .execute(&pool)
        .await
        .unwrap();
    let broken = idem(&[&["verify"], &args[..]].concat());
    assert_eq!(broken.code, 1, "{}{}", broken.out, broken.err);
    assert!(broken.out.contains("idem_fences"), "{}", broken.out);
    pool.close().await;
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
}
