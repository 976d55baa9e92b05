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
//! Routes and techniques: see `app.rs`. The README shows `curl` lines.

#[path = "app.rs"]
mod app;
#[path = "demo.rs"]
mod demo;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let demo = std::env::args().any(|a| a == "--demo");
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let dir = std::env::temp_dir().join(format!("idem-shop-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let shop = app::open(&dir.join("shop.db"), "shop", Some(prometheus)).await?;
    let addr = std::env::var("SHOP_ADDR").unwrap_or_else(|_| {
        if demo {
            "127.0.0.1:0"
        } else {
            "127.0.0.1:3000"
        }
        .to_owned()
    });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    let b = &shop.backends;
    println!(
        "shop on http://{local} (idempotency store: {}, business db: {})",
        b.idem_store, b.business_db
    );
    let server = tokio::spawn(axum::serve(listener, app::router(shop.clone())).into_future());
    let result = if demo {
        let report = demo::run(&shop, &format!("http://{local}")).await?;
        demo::print(&report, "shop");
        if report.rounds.iter().all(|r| r.pass) {
            Ok(())
        } else {
            Err("a verdict failed".into())
        }
    } else {
        server.await?.map_err(Into::into)
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
}
