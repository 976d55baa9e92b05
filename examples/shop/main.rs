//! The shop: an axum service using idem's techniques over HTTP, on the embedded
//! default (in-process idempotency store, SQLite business tables). Set
//! `REDIS_URL` (with `--features redis`) or `DATABASE_URL` (PostgreSQL, with
//! `--features postgres`) to keep idempotency records there instead.
//!
//! ```text
//! cargo run --example shop --features axum            # serve on 127.0.0.1:3000
//! cargo run --example shop --features axum -- --demo  # the seed's four rounds over HTTP
//! ```
//!
//! `SHOP_ADDR` (listen address), `SHOP_DB` (keep the business tables in this
//! SQLite file; namespace `shop`), `SHOP_NAMESPACE`. Routes and techniques:
//! see `app.rs`; running and copying it: `docs/shop.md`.

#[path = "app.rs"]
mod app;
#[path = "demo.rs"]
mod demo;
#[path = "run.rs"]
mod run;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let config = run::Config::from_env();
    if std::env::args().any(|a| a == "--demo") {
        let (report, _shop) = run::demo(&config.store, Some(prometheus)).await?;
        return if report.rounds.iter().all(|r| r.pass) {
            Ok(())
        } else {
            Err("a verdict failed".into())
        };
    }
    let opened = run::open(&config, Some(prometheus)).await?;
    let addr = std::env::var("SHOP_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("{}", run::banner(&opened.shop, listener.local_addr()?));
    let limits = app::server::Limits::default();
    app::server::serve(listener, app::router(opened.shop.clone()), limits).await;
    Ok(())
}
