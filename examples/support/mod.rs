//! What every example shares: the one set of environment variables, a fresh
//! database per run on a shared server (so a second run, or someone else's run
//! at the same time, never meets this run's rows), and the line saying which
//! backends were used. Not an example itself (cargo only discovers
//! `examples/*.rs` and `examples/*/main.rs`).

#![allow(dead_code)] // each example uses part of it

/// The database of `DATABASE_URL`, `postgres://…` or `mysql://…`; unset or
/// `sqlite…`: an embedded SQLite file.
pub(crate) const DATABASE_URL: &str = "DATABASE_URL";
/// The Redis server for the idempotency records, `redis://…`.
pub(crate) const REDIS_URL: &str = "REDIS_URL";
/// RabbitMQ, `amqp://…`.
pub(crate) const AMQP_URL: &str = "AMQP_URL";
/// NATS with JetStream, `nats://…`.
pub(crate) const NATS_URL: &str = "NATS_URL";

/// The value of one of the variables above, if set and not empty.
pub(crate) fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A short random id for this run: namespaces, schemas, queues.
pub(crate) fn run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..10].to_owned()
}

/// `url` without its password, for printing.
pub(crate) fn redact(url: &str) -> String {
    idem::store::redact_url(url)
}

/// A fresh PostgreSQL schema named `idem_ex_<run>` on the server of `url`:
/// the pool's connections use it as their `search_path`, and
/// [`drop_pg_schema`] removes it.
#[cfg(feature = "postgres")]
pub(crate) async fn fresh_pg(
    url: &str,
    run: &str,
    max: u32,
) -> Result<(sqlx::PgPool, String), Box<dyn std::error::Error>> {
    use std::str::FromStr;
    let schema = format!("idem_ex_{run}");
    let admin = sqlx::PgPool::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await?;
    admin.close().await;
    let opts = sqlx::postgres::PgConnectOptions::from_str(url)?.options([("search_path", &schema)]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(max)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    Ok((pool, schema))
}

/// Drops the schema [`fresh_pg`] made, with everything in it.
#[cfg(feature = "postgres")]
pub(crate) async fn drop_pg_schema(pool: &sqlx::PgPool, schema: &str) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(pool)
        .await?;
    Ok(())
}

/// A fresh MySQL/MariaDB database named `idem_ex_<run>` on the server of
/// `url`; [`drop_my_database`] removes it.
#[cfg(feature = "mysql")]
pub(crate) async fn fresh_my(
    url: &str,
    run: &str,
    max: u32,
) -> Result<(sqlx::MySqlPool, String), Box<dyn std::error::Error>> {
    use std::str::FromStr;
    let name = format!("idem_ex_{run}");
    let admin = sqlx::MySqlPool::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await?;
    admin.close().await;
    let opts = sqlx::mysql::MySqlConnectOptions::from_str(url)?.database(&name);
    let pool = sqlx::mysql::MySqlPoolOptions::new()
        .max_connections(max)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    Ok((pool, name))
}

/// Drops the database [`fresh_my`] made.
#[cfg(feature = "mysql")]
pub(crate) async fn drop_my_database(
    pool: &sqlx::MySqlPool,
    name: &str,
) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
        .execute(pool)
        .await?;
    Ok(())
}

/// The error for a `DATABASE_URL` whose driver this build leaves out.
pub(crate) fn needs_feature(var: &str, url: &str, feature: &str, example: &str) -> String {
    format!(
        "{var}={} needs the `{feature}` feature: cargo run --example {example} --features {feature}",
        redact(url)
    )
}

/// Prints the backends line every example starts with.
pub(crate) fn print_backends(parts: &[(&str, String)]) {
    let line: Vec<String> = parts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    println!("backends: {}", line.join("; "));
}
