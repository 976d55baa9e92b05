//! Opening the store a URL names, with the table names and prefix given.

use std::sync::Arc;
use std::time::Duration;

use idem::Store;
use idem::sql::{SqlConstraints, SqlStore, TableNames};
use idem::store::redis::{RedisClusterStore, RedisStore};

use crate::args::Global;
use crate::fail::{Fail, UNREACHABLE, USAGE};

/// The table names of `--table` and `--schema` (the defaults otherwise).
pub(crate) fn tables(g: &Global) -> Result<TableNames, Fail> {
    let usage = |e: idem::store::StoreError| Fail::new(USAGE, e.to_string());
    let mut names = match &g.table {
        Some(t) => TableNames::new(t).map_err(usage)?,
        None => TableNames::default(),
    };
    if let Some(s) = &g.schema {
        names = names.schema(s).map_err(usage)?;
    }
    Ok(names)
}

fn is_redis(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://")
}

fn is_sql(url: &str) -> bool {
    [
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
    ]
    .iter()
    .any(|s| url.starts_with(s))
}

/// The store of `--store` (or `$REDIS_URL`, `$DATABASE_URL`), connected.
pub(crate) async fn store(g: &Global) -> Result<Arc<dyn Store>, Fail> {
    let Some(url) = g.url() else {
        return Err(Fail::new(
            USAGE,
            "no store: give --store URL, or set REDIS_URL or DATABASE_URL",
        ));
    };
    let connect = |e| Fail::connect(e);
    if g.cluster {
        let nodes: Vec<&str> = url.split(',').filter(|n| !n.is_empty()).collect();
        let store = RedisClusterStore::builder(nodes)
            .prefix(g.prefix.clone())
            .connect()
            .await
            .map_err(connect)?;
        return Ok(Arc::new(store));
    }
    if is_redis(&url) {
        let store = RedisStore::builder(url)
            .prefix(g.prefix.clone())
            .connect()
            .await
            .map_err(connect)?;
        return Ok(Arc::new(store));
    }
    if is_sql(&url) {
        return Ok(Arc::new(sql_at(g, url, tables(g)?).await?));
    }
    Err(not_a_store(&url))
}

fn not_a_store(url: &str) -> Fail {
    Fail::new(
        USAGE,
        format!(
            "`{}` is not a store URL: expected redis://, postgres://, mysql://, mariadb:// or sqlite:",
            idem::store::redact_url(url)
        ),
    )
}

/// A SQL store at `url` on `names`, connected. A server that refuses the
/// connection fails at once, as Redis does (not after the pool's wait); a
/// SQLite path is opened read-write and never created.
async fn sql_at(g: &Global, url: String, names: TableNames) -> Result<SqlStore, Fail> {
    let connect = |e| Fail::connect(e);
    if let Some(path) = url.strip_prefix("sqlite:") {
        return sqlite(g, path, &url).await.map(|s| s.with_tables(names));
    }
    crate::probe::refused(&url, g.timeout).await?;
    SqlStore::builder(url)
        .tables(names)
        .max_connections(2)
        .acquire_timeout(
            g.timeout
                .clamp(Duration::from_secs(1), Duration::from_secs(10)),
        )
        .connect()
        .await
        .map_err(connect)
}

/// The SQLite database at `path`, which must exist: a mistyped path is an
/// error, not a new empty database.
async fn sqlite(g: &Global, path: &str, url: &str) -> Result<SqlStore, Fail> {
    use idem::sqlx::sqlite::SqliteConnectOptions;
    let file = path.trim_start_matches("//");
    let file = file.split('?').next().unwrap_or(file);
    let opts: SqliteConnectOptions = url
        .parse()
        .map_err(|e| Fail::new(USAGE, format!("`{url}` is not a SQLite URL: {e}")))?;
    let opts = opts
        .create_if_missing(false)
        .busy_timeout(g.timeout.min(Duration::from_secs(5)));
    let pool = idem::sqlx::pool::PoolOptions::new()
        .max_connections(2)
        .connect_with(opts)
        .await
        .map_err(|e| {
            let missing = !std::path::Path::new(file).exists();
            let text = match missing {
                true => format!(
                    "no SQLite database at `{file}`: the command opens an existing file and \
                     never creates one; check the path"
                ),
                false => format!("cannot open the SQLite database at `{file}`: {e}"),
            };
            Fail::new(UNREACHABLE, text)
        })?;
    Ok(SqlStore::sqlite(pool))
}

/// Which messaging table `--table` names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Messaging {
    Outbox,
    ConsumeLog,
}

/// The SQL database of `outbox` and `consume`, `--table` naming their table
/// (`--schema` as for the others). Redis holds neither: usage.
pub(crate) async fn messaging(g: &Global, which: Messaging) -> Result<SqlStore, Fail> {
    let Some(url) = g.sql_url() else {
        return Err(Fail::new(
            USAGE,
            "no store: give --store URL (the service's SQL database), or set DATABASE_URL",
        ));
    };
    if is_redis(&url) || g.cluster {
        return Err(Fail::new(
            USAGE,
            "the outbox and the consume log live in the service's SQL database: give --store \
             postgres://, mysql://, mariadb:// or sqlite: (Redis holds neither)",
        ));
    }
    if !is_sql(&url) {
        return Err(not_a_store(&url));
    }
    let usage = |e: idem::store::StoreError| Fail::new(USAGE, e.to_string());
    let mut names = TableNames::default();
    if let Some(t) = &g.table {
        names = match which {
            Messaging::Outbox => names.outbox(t),
            Messaging::ConsumeLog => names.consume_log(t),
        }
        .map_err(usage)?;
    }
    if let Some(s) = &g.schema {
        names = names.schema(s).map_err(usage)?;
    }
    sql_at(g, url, names).await
}

/// The constraint catalog of `verify --backstop`: the database of
/// `--constraints URL`, else the store's own when it is SQL.
pub(crate) async fn catalog(
    g: &Global,
    constraints: Option<&str>,
) -> Result<Option<SqlConstraints>, Fail> {
    let Some(url) = constraints.map(str::to_owned).or_else(|| g.url()) else {
        return Ok(None);
    };
    let unreachable = |e: idem::sqlx::Error| {
        Fail::new(
            crate::fail::UNREACHABLE,
            format!("cannot open the constraints database: {e}"),
        )
    };
    crate::probe::refused(&url, g.timeout).await?;
    let catalog = if url.starts_with("postgres") {
        SqlConstraints::postgres(
            idem::sqlx::PgPool::connect(&url)
                .await
                .map_err(unreachable)?,
        )
    } else if url.starts_with("mysql") || url.starts_with("mariadb") {
        let url = url.replacen("mariadb://", "mysql://", 1);
        SqlConstraints::mysql(
            idem::sqlx::MySqlPool::connect(&url)
                .await
                .map_err(unreachable)?,
        )
    } else if url.starts_with("sqlite:") {
        SqlConstraints::sqlite(
            idem::sqlx::SqlitePool::connect(&url)
                .await
                .map_err(unreachable)?,
        )
    } else if constraints.is_some() {
        return Err(Fail::new(
            USAGE,
            "--constraints takes a postgres://, mysql:// or sqlite: URL",
        ));
    } else {
        return Ok(None);
    };
    Ok(Some(catalog))
}
