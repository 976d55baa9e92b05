//! The stores every store-generic suite runs on, listed once.
//!
//! `for_each_store!(path::to::suite)` writes one module per store (`memory`,
//! `redis`, `redis_cluster`, `postgres`, `mariadb`, `sqlite`), each behind the
//! features its store needs, and in it invokes
//! `path::to::suite!(store = <async expr giving Arc<dyn Store>>, keys = <usize>)`.
//! `keys` sizes a suite's many-keys burst for that store; suites without one
//! ignore it. Adding a store is one line in [`for_each_store!`].

use std::sync::Arc;

use idem::Store;

/// The in-process store.
pub fn memory() -> Arc<dyn Store> {
    Arc::new(idem::MemoryStore::new())
}

/// Records on the shared Redis live under a prefix naming this process; the
/// first use sweeps the prefixes of test processes that are gone, so a killed
/// run leaves nothing behind for long.
#[cfg(feature = "redis")]
fn process_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        sweep_dead_runs();
        format!("{SWEEP_ROOT}{}:", std::process::id())
    })
}

#[cfg(feature = "redis")]
const SWEEP_ROOT: &str = "idem-it:conformance:";

#[cfg(feature = "redis")]
fn sweep_dead_runs() {
    use crate::support::redis_server::cli;
    let keys = cli(6379, &["--scan", "--pattern", &format!("{SWEEP_ROOT}*")]);
    let dead: Vec<&str> = keys
        .lines()
        .filter(|k| {
            let pid = k[SWEEP_ROOT.len().min(k.len())..]
                .split(':')
                .next()
                .unwrap_or("");
            !pid.parse::<u32>()
                .is_ok_and(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
        })
        .collect();
    for chunk in dead.chunks(200) {
        let mut args = vec!["DEL"];
        args.extend(chunk.iter().copied());
        cli(6379, &args);
    }
}

/// A Redis store on the shared server under a fresh prefix inside this
/// process's swept root.
#[cfg(feature = "redis")]
pub async fn redis() -> Arc<dyn Store> {
    let prefix = format!("{}{}:", process_prefix(), uuid::Uuid::new_v4().simple());
    Arc::new(
        idem::store::redis::RedisStore::builder(crate::support::redis_server::SHARED_URL)
            .prefix(prefix)
            .connect()
            .await
            .expect("shared Redis at 127.0.0.1:6379 must be running"),
    )
}

/// The process's test-owned cluster, under a fresh prefix.
#[cfg(feature = "redis")]
pub async fn redis_cluster() -> Arc<dyn Store> {
    Arc::new(
        idem::store::redis::RedisClusterStore::builder(
            crate::support::redis_server::process_cluster().urls(),
        )
        .prefix(format!("t{}:", uuid::Uuid::new_v4().simple()))
        .connect()
        .await
        .expect("test-owned cluster"),
    )
}

/// Keys of a many-keys burst on Redis: 50 callers each behind one barrier. 20
/// keys (1000 simultaneous callers on one multiplexed connection) stay within
/// the 500 ms response timeout of a debug build on 2 shared cores;
/// `IDEM_STRESS=1` runs 200.
pub fn redis_keys() -> usize {
    if std::env::var_os("IDEM_STRESS").is_some() {
        200
    } else {
        20
    }
}

/// The store list. One line per store: module name, the features it needs,
/// the store, and the size of a many-keys burst on it.
macro_rules! for_each_store {
    ($($suite:ident)::+) => {
        $crate::support::stores::for_each_store!(@each [$($suite)::+]
            memory        [all()] [$crate::support::stores::memory()] [1000];
            redis         [feature = "redis"] [$crate::support::stores::redis().await] [$crate::support::stores::redis_keys()];
            redis_cluster [feature = "redis"] [$crate::support::stores::redis_cluster().await] [$crate::support::stores::redis_keys()];
            postgres      [all(feature = "postgres", feature = "mysql", feature = "sqlite")] [$crate::support::sql::conformance_store(idem::db::Dialect::Postgres).await] [$crate::support::sql::many_keys(idem::db::Dialect::Postgres)];
            mariadb       [all(feature = "postgres", feature = "mysql", feature = "sqlite")] [$crate::support::sql::conformance_store(idem::db::Dialect::MySql).await] [$crate::support::sql::many_keys(idem::db::Dialect::MySql)];
            sqlite        [all(feature = "postgres", feature = "mysql", feature = "sqlite")] [$crate::support::sql::conformance_store(idem::db::Dialect::Sqlite).await] [$crate::support::sql::many_keys(idem::db::Dialect::Sqlite)];
        );
    };
    (@each [$($suite:tt)*] $name:ident [$($cfg:tt)*] [$store:expr] [$keys:expr]; $($rest:tt)*) => {
        #[cfg($($cfg)*)]
        mod $name {
            $($suite)*!(store = $store, keys = $keys);
        }
        $crate::support::stores::for_each_store!(@each [$($suite)*] $($rest)*);
    };
    (@each [$($suite:tt)*]) => {};
}
pub(crate) use for_each_store;
