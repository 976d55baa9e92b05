//! The two ways to run the shop, shared by `main.rs` and the tests: serve it,
//! or run the `--demo` against a fresh shop of its own.

use std::net::SocketAddr;

use super::app::{self, IdemStore, Shop};
use super::demo;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the shop is started.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Where idempotency records live.
    pub(crate) store: IdemStore,
    /// The business database (SQLite); `None`: a fresh file per process.
    pub(crate) db_path: Option<std::path::PathBuf>,
    /// The key namespace; `None`: `shop` for a named database, else a fresh one.
    pub(crate) namespace: Option<String>,
}

impl Config {
    /// `REDIS_URL` / `DATABASE_URL`, `SHOP_DB`, `SHOP_NAMESPACE`.
    pub(crate) fn from_env() -> Self {
        Config {
            store: IdemStore::from_env(),
            db_path: std::env::var_os("SHOP_DB").map(Into::into),
            namespace: std::env::var("SHOP_NAMESPACE").ok(),
        }
    }

    /// The namespace this run uses: a kept business database keeps its
    /// records under `shop`; a fresh one gets a namespace no run used before.
    fn namespace(&self) -> String {
        match (&self.namespace, &self.db_path) {
            (Some(ns), _) => ns.clone(),
            (None, Some(_)) => "shop".to_owned(),
            (None, None) => app::fresh_namespace(),
        }
    }
}

/// A shop with its business database, removed on drop when it was a fresh one.
pub(crate) struct Opened {
    pub(crate) shop: Shop,
    temp: Option<std::path::PathBuf>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Some(dir) = &self.temp {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Opens the shop `config` describes.
pub(crate) async fn open(
    config: &Config,
    prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
) -> Result<Opened, BoxError> {
    let namespace = config.namespace();
    let (db, temp) = match &config.db_path {
        Some(p) => (p.clone(), None),
        None => {
            let dir = std::env::temp_dir().join(format!("idem-{namespace}-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            (dir.join("shop.db"), Some(dir))
        }
    };
    let shop = app::open(&db, &namespace, &config.store, prometheus).await?;
    Ok(Opened { shop, temp })
}

/// `shop on http://… (…)`: what serves this shop.
pub(crate) fn banner(shop: &Shop, addr: SocketAddr) -> String {
    let b = &shop.backends;
    format!(
        "shop on http://{addr} (idempotency store: {}, namespace: {}, business db: {})",
        b.idem_store, b.namespace, b.business_db
    )
}

/// `--demo`: a fresh shop (its own business database and namespace, so a
/// second run on the same servers starts clean), served on loopback, driven
/// by the demo; prints and returns its report.
pub(crate) async fn demo(
    store: &IdemStore,
    prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
) -> Result<(demo::Report, Shop), BoxError> {
    let config = Config {
        store: store.clone(),
        db_path: None,
        namespace: None,
    };
    let opened = open(&config, prometheus).await?;
    let shop = opened.shop.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let serving = app::server::spawn(listener, app::router(shop.clone()), Default::default());
    println!("{}", banner(&shop, serving.addr));
    let report = demo::run(&shop, &format!("http://{}", serving.addr)).await;
    drop(serving);
    let report = report?;
    demo::print(&report, &shop.backends.namespace);
    Ok((report, shop))
}
