//! The payment-callback recipe (seed §6.1): a payment provider delivers its
//! "paid" callback several times, concurrently and out of order; the order
//! moves WAIT_PAY -> PAY_SUCCESS once, the payment row is written once, and
//! every repeat is answered as a success.
//!
//! ```text
//! cargo run --example payment_callback                      # embedded SQLite
//! DATABASE_URL=postgres://postgres@127.0.0.1/test \
//!   cargo run --example payment_callback --features postgres
//! DATABASE_URL=mysql://root@127.0.0.1/test \
//!   cargo run --example payment_callback --features mysql
//! ```
//!
//! The transition is the idempotency: `UPDATE t_order SET status = 'PAY_SUCCESS'
//! WHERE order_no = ? AND status IN ('WAIT_PAY')` in the callback's
//! transaction. The payment number's primary key is the backstop: even a bug
//! that ran the body twice could not book the payment twice.

use std::time::Duration;

mod support;

use idem::Transition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(
    WaitPay -> PaySuccess,
    PaySuccess -> Shipped,
    Shipped -> Received,
    PaySuccess -> Refunding,
    Refunding -> Refunded,
))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
    Received,
    Refunding,
    Refunded,
}

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// One callback service per database; the attribute names the transaction's
/// database type, so each gets its own copy here (an application has one).
macro_rules! service {
    ($module:ident, $db:ty, $placeholders:literal) => {
        mod $module {
            use super::*;

            /// `?` placeholders, or `$1, $2` on PostgreSQL.
            fn sql(text: &str) -> sqlx::AssertSqlSafe<String> {
                let mut out = String::new();
                let mut n = 0;
                for c in text.chars() {
                    if c == '?' && $placeholders {
                        n += 1;
                        out.push_str(&format!("${n}"));
                    } else {
                        out.push(c);
                    }
                }
                sqlx::AssertSqlSafe(out)
            }

            /// The callback handler: the state change is the guard; the payment
            /// row is the body's write in the same transaction.
            #[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
                table = "t_order", key = order_no, key_column = "order_no", tx = tx)]
            async fn on_paid(
                tx: &mut sqlx::Transaction<'_, $db>,
                order_no: &str,
                pay_no: &str,
                amount: i64,
            ) -> Result<Transition<i64>, AppError> {
                sqlx::query(sql("INSERT INTO t_payment (pay_no, order_no, amount) VALUES (?, ?, ?)"))
                    .bind(pay_no)
                    .bind(order_no)
                    .bind(amount)
                    .execute(&mut **tx)
                    .await?;
                // Slow enough that the other deliveries arrive meanwhile.
                tokio::time::sleep(Duration::from_millis(200)).await;
                Ok(amount)
            }

            /// One delivery: its own transaction, committed when the handler
            /// succeeded (a repeat commits nothing).
            async fn deliver(pool: &sqlx::Pool<$db>, order_no: &str, pay_no: &str)
                -> Result<Transition<i64>, AppError> {
                let mut tx = pool.begin().await?;
                let out = on_paid(&mut tx, order_no, pay_no, 4200).await?;
                tx.commit().await?;
                Ok(out)
            }

            pub(crate) async fn run(pool: sqlx::Pool<$db>) -> Result<(), AppError> {
                for ddl in [
                    "DROP TABLE IF EXISTS t_payment",
                    "DROP TABLE IF EXISTS t_order",
                    "CREATE TABLE t_order (order_no VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(32) NOT NULL)",
                    "CREATE TABLE t_payment (pay_no VARCHAR(64) NOT NULL PRIMARY KEY, order_no VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)",
                ] {
                    sqlx::raw_sql(ddl).execute(&pool).await?;
                }
                sqlx::query(sql("INSERT INTO t_order (order_no, status) VALUES (?, ?)"))
                    .bind("ORD-1")
                    .bind(OrderStatus::WaitPay)
                    .execute(&pool)
                    .await?;

                println!("five concurrent deliveries of the callback for ORD-1:");
                let barrier = tokio::sync::Barrier::new(5);
                let one = |i: usize| {
                    let (pool, barrier) = (&pool, &barrier);
                    async move {
                        barrier.wait().await;
                        (i, deliver(pool, "ORD-1", "PAY-9001").await)
                    }
                };
                let (a, b, c, d, e) = tokio::join!(one(1), one(2), one(3), one(4), one(5));
                for (i, r) in [a, b, c, d, e] {
                    println!("  delivery {i}: {r:?}");
                }

                // The merchant ships; then the provider retries once more.
                sqlx::query(sql("UPDATE t_order SET status = ? WHERE order_no = ?"))
                    .bind(OrderStatus::Shipped)
                    .bind("ORD-1")
                    .execute(&pool)
                    .await?;
                let late = deliver(&pool, "ORD-1", "PAY-9001").await;
                println!("a late delivery after shipping: {late:?}");

                let payments: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t_payment")
                    .fetch_one(&pool)
                    .await?;
                let status: OrderStatus = sqlx::query_scalar(sql("SELECT status FROM t_order WHERE order_no = ?"))
                    .bind("ORD-1")
                    .fetch_one(&pool)
                    .await?;
                println!("payment rows: {payments}; order status: {status}");
                sqlx::raw_sql("DROP TABLE t_payment; DROP TABLE t_order").execute(&pool).await?;
                Ok(())
            }
        }
    };
}

service!(lite, sqlx::Sqlite, false);
#[cfg(feature = "postgres")]
service!(pg, sqlx::Postgres, true);
#[cfg(feature = "mysql")]
service!(my, sqlx::MySql, false);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = support::var(support::DATABASE_URL).unwrap_or_default();
    let run = support::run_id();
    match idem::db::Dialect::from_url(&url) {
        #[cfg(feature = "postgres")]
        Some(idem::db::Dialect::Postgres) => {
            // A fresh schema per run: runs on a shared server never meet.
            let (pool, schema) = support::fresh_pg(&url, &run, 6).await?;
            support::print_backends(&[(
                "orders and payments",
                format!("PostgreSQL at {}, schema `{schema}`", support::redact(&url)),
            )]);
            let r = pg::run(pool.clone()).await;
            support::drop_pg_schema(&pool, &schema).await?;
            r?;
        }
        #[cfg(feature = "mysql")]
        Some(idem::db::Dialect::MySql) => {
            let url = url.replacen("mariadb:", "mysql:", 1);
            let (pool, db) = support::fresh_my(&url, &run, 6).await?;
            support::print_backends(&[(
                "orders and payments",
                format!(
                    "MySQL/MariaDB at {}, database `{db}`",
                    support::redact(&url)
                ),
            )]);
            let r = my::run(pool.clone()).await;
            support::drop_my_database(&pool, &db).await?;
            r?;
        }
        #[cfg(not(feature = "postgres"))]
        Some(idem::db::Dialect::Postgres) => {
            return Err(support::needs_feature(
                support::DATABASE_URL,
                &url,
                "postgres",
                "payment_callback",
            )
            .into());
        }
        Some(other) if !url.starts_with("sqlite") => {
            let _ = other;
            return Err(support::needs_feature(
                support::DATABASE_URL,
                &url,
                "mysql",
                "payment_callback",
            )
            .into());
        }
        _ => {
            // A temporary file, not `:memory:`: each pooled connection to
            // `:memory:` would be a database of its own.
            let path = std::env::temp_dir().join(format!("idem-payment-{run}.db"));
            support::print_backends(&[(
                "orders and payments",
                format!("SQLite at {}", path.display()),
            )]);
            let opts = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true)
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(10));
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(6)
                .test_before_acquire(false)
                .connect_with(opts)
                .await?;
            let r = lite::run(pool.clone()).await;
            pool.close().await;
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            r?;
        }
    }
    Ok(())
}
