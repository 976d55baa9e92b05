//! The seed's §6.1 recipes inside the business transaction: the record of each
//! request is written in the same transaction as its business rows
//! (`Guard::in_tx`), so they commit or roll back together.
//!
//! 1. inventory: a hot SKU with stock 5, eight buyers, each request sent twice
//!    at once: a conditional update (`stock >= 1`) keeps the stock from going
//!    negative, the guard keeps a repeat from buying twice;
//! 2. cumulative refunds on one order (paid 100): refunds of 30, 30 and 50,
//!    each sent twice: the refunded total never exceeds the paid amount;
//! 3. a parent/child order insert sent twice: insert-once on the order
//!    number's unique index; the duplicate leaves no orphan lines.
//!
//! Runs on an embedded SQLite file by default, on PostgreSQL or MariaDB when
//! `DATABASE_URL` names one:
//! ```text
//! cargo run --example inventory_refund
//! DATABASE_URL=postgres://postgres@127.0.0.1/test cargo run --example inventory_refund --features postgres
//! DATABASE_URL=mysql://root@127.0.0.1/test cargo run --example inventory_refund --features mysql
//! ```
//!
//! On a server each run works in a fresh schema (PostgreSQL) or database
//! (MariaDB), `idem_ex_<run>`, dropped at the end, under a fresh namespace: a
//! second run, or another person's at the same time, never meets its rows.

use std::sync::Arc;

mod support;

use idem::SqlStore;
use idem::db::insert_once::InsertOnce;
use idem::{How, Idem};

#[derive(Debug, thiserror::Error)]
enum ShopError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

impl ShopError {
    /// A transaction lost to a concurrent one: run it again.
    fn is_conflict(&self) -> bool {
        match self {
            ShopError::Idem(e) => matches!(e, idem::Error::TxConflict { .. }),
            ShopError::Db(e) => idem::db::is_retryable_conflict(e),
        }
    }
}

const TABLES: [&str; 5] = [
    "CREATE TABLE ir_sku (sku_id VARCHAR(32) NOT NULL PRIMARY KEY, stock BIGINT NOT NULL)",
    "CREATE TABLE ir_pay (order_no VARCHAR(32) NOT NULL PRIMARY KEY, paid BIGINT NOT NULL, refunded BIGINT NOT NULL)",
    "CREATE TABLE ir_order (order_no VARCHAR(32) NOT NULL, total BIGINT NOT NULL)",
    "CREATE UNIQUE INDEX uk_ir_order_no ON ir_order (order_no)",
    "CREATE TABLE ir_line (order_no VARCHAR(32) NOT NULL, line BIGINT NOT NULL)",
];

/// One demo per database type: the statements differ only in placeholders.
macro_rules! demo {
    ($pool:expr, $db:ty, $store:ident, $begin:expr, $p1:literal, $p2:literal) => {{
        let pool = $pool;
        for t in ["ir_line", "ir_order", "ir_pay", "ir_sku"] {
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {t}")))
                .execute(&pool)
                .await;
        }
        for t in TABLES {
            sqlx::raw_sql(sqlx::AssertSqlSafe(t)).execute(&pool).await?;
        }
        sqlx::raw_sql(
            "INSERT INTO ir_sku (sku_id, stock) VALUES ('hot', 5); \
             INSERT INTO ir_pay (order_no, paid, refunded) VALUES ('o-7', 100, 0)",
        )
        .execute(&pool)
        .await?;
        let store = SqlStore::$store(pool.clone());
        store.migrate().await.map_err(|e| idem::Error::Config(e.to_string()))?;
        let idem = Arc::new(Idem::builder().store(store).namespace(format!("inventory-{}", support::run_id())).build()?);
        // SQLite: `BEGIN IMMEDIATE`, as the transactional guard needs there.
        let begin = {
            let pool = pool.clone();
            move || {
                let pool = pool.clone();
                async move {
                    let b: Option<&str> = $begin;
                    match b {
                        Some(b) => pool.begin_with(b).await,
                        None => pool.begin().await,
                    }
                }
            }
        };

        // 1. Inventory: 8 buyers, each request twice at once.
        let mut tasks = tokio::task::JoinSet::new();
        for buyer in 0..8 {
            for _ in 0..2 {
                let (idem, begin) = (Arc::clone(&idem), begin.clone());
                tasks.spawn(async move {
                    let req = format!("buyer-{buyer}");
                    loop {
                        let mut tx = begin().await?;
                        let r = idem
                            .guard("sku-buy", &[&req])
                            .in_tx(&mut tx)
                            .run(|tx, _fence| {
                                Box::pin(async move {
                                    let n = sqlx::query(
                                        "UPDATE ir_sku SET stock = stock - 1 WHERE sku_id = 'hot' AND stock >= 1",
                                    )
                                    .execute(&mut **tx)
                                    .await?
                                    .rows_affected();
                                    Ok::<_, ShopError>(n == 1)
                                })
                            })
                            .await;
                        match r {
                            Ok(out) => {
                                tx.commit().await?;
                                return Ok::<_, ShopError>((req, *out.value(), out.how()));
                            }
                            Err(e) if e.is_conflict() => continue,
                            Err(e) => return Err(e),
                        }
                    }
                });
            }
        }
        for r in tasks.join_all().await {
            let (req, bought, how) = r?;
            println!("  buy {req}: {} ({})", if bought { "bought" } else { "sold out" }, label(how));
        }

        // 2. Refunds on one order, each sent twice.
        for (id, amount) in [("rf-1", 30_i64), ("rf-2", 30), ("rf-3", 50)] {
            for _ in 0..2 {
                let mut tx = begin().await?;
                let out = idem
                    .guard("refund", &[&"o-7", &id])
                    .in_tx(&mut tx)
                    .run(|tx, _fence| {
                        Box::pin(async move {
                            let n = sqlx::query(concat!(
                                "UPDATE ir_pay SET refunded = refunded + ", $p1,
                                " WHERE order_no = 'o-7' AND refunded + ", $p2, " <= paid"
                            ))
                            .bind(amount)
                            .bind(amount)
                            .execute(&mut **tx)
                            .await?
                            .rows_affected();
                            Ok::<_, ShopError>(n == 1)
                        })
                    })
                    .await?;
                tx.commit().await?;
                println!(
                    "  refund {id} of {amount}: {} ({})",
                    if *out.value() { "refunded" } else { "refused: over the paid amount" },
                    label(out.how())
                );
            }
        }

        // 3. A parent/child order insert, sent twice.
        for _ in 0..2 {
            let mut tx = begin().await?;
            let r = InsertOnce::new("uk_ir_order_no")
                .handle(&idem)
                .run(
                    &mut tx,
                    "po-1",
                    |tx| {
                        Box::pin(async move {
                            for line in 1..=3_i64 {
                                sqlx::query(concat!("INSERT INTO ir_line (order_no, line) VALUES ('po-1', ", $p1, ")"))
                                    .bind(line)
                                    .execute(&mut **tx)
                                    .await?;
                            }
                            sqlx::query("INSERT INTO ir_order (order_no, total) VALUES ('po-1', 30)")
                                .execute(&mut **tx)
                                .await?;
                            Ok("created")
                        })
                    },
                    |_tx| Box::pin(async move { Ok("already there") }),
                )
                .await?;
            tx.commit().await?;
            println!("  order po-1 with 3 lines: {}", r.into_inner());
        }

        let ints = |sql: &'static str| {
            let pool = pool.clone();
            async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await }
        };
        println!(
            "final rows: stock {}, refunded {} of 100, orders {}, lines {}",
            ints("SELECT stock FROM ir_sku").await?,
            ints("SELECT refunded FROM ir_pay").await?,
            ints("SELECT COUNT(*) FROM ir_order").await?,
            ints("SELECT COUNT(*) FROM ir_line").await?,
        );
        Ok::<(), ShopError>(())
    }};
}

fn label(how: How) -> &'static str {
    how.as_str()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = support::var(support::DATABASE_URL).unwrap_or_default();
    let run = support::run_id();
    if url.starts_with("postgres") {
        #[cfg(feature = "postgres")]
        {
            let (pool, schema) = support::fresh_pg(&url, &run, 8).await?;
            support::print_backends(&[(
                "business rows and records",
                format!("PostgreSQL at {}, schema `{schema}`", support::redact(&url)),
            )]);
            let r = async { demo!(pool.clone(), sqlx::Postgres, postgres, None, "$1", "$2") }.await;
            support::drop_pg_schema(&pool, &schema).await?;
            return Ok(r?);
        }
        #[cfg(not(feature = "postgres"))]
        return Err(support::needs_feature(
            support::DATABASE_URL,
            &url,
            "postgres",
            "inventory_refund",
        )
        .into());
    }
    if url.starts_with("mysql") || url.starts_with("mariadb") {
        #[cfg(feature = "mysql")]
        {
            let (pool, db) =
                support::fresh_my(&url.replacen("mariadb:", "mysql:", 1), &run, 8).await?;
            support::print_backends(&[(
                "business rows and records",
                format!(
                    "MySQL/MariaDB at {}, database `{db}`",
                    support::redact(&url)
                ),
            )]);
            let r = async { demo!(pool.clone(), sqlx::MySql, mysql, None, "?", "?") }.await;
            support::drop_my_database(&pool, &db).await?;
            return Ok(r?);
        }
        #[cfg(not(feature = "mysql"))]
        return Err(support::needs_feature(
            support::DATABASE_URL,
            &url,
            "mysql",
            "inventory_refund",
        )
        .into());
    }
    let path = std::env::temp_dir().join(format!("idem-inventory-{run}.db"));
    support::print_backends(&[(
        "business rows and records",
        format!("SQLite at {}", path.display()),
    )]);
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(std::time::Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    let r = async {
        demo!(
            pool.clone(),
            sqlx::Sqlite,
            sqlite,
            Some("BEGIN IMMEDIATE"),
            "?",
            "?"
        )
    }
    .await;
    pool.close().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(r?)
}
