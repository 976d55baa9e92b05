//! Leaves an operator something to look at: under namespace `NS` in the
//! store at `URL`, two finished `order-create` records, two `pay` records
//! that expire after 2 s, and a `refund` claim whose body was running when
//! its future was dropped (what a killed process leaves behind).
//!
//! ```text
//! cargo run -p idem-cli --example seed -- redis://127.0.0.1:6379 shop
//! idem --store redis://127.0.0.1:6379 -n shop stats
//! ```

use std::sync::Arc;
use std::time::Duration;

use idem::store::redis::RedisStore;
use idem::store::sql::SqlStore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(ns)) = (args.next(), args.next()) else {
        return Err("usage: seed URL NAMESPACE".into());
    };
    let store: Arc<dyn idem::Store> = if url.starts_with("redis") {
        Arc::new(RedisStore::connect(&url).await?)
    } else {
        let s = SqlStore::builder(url).connect().await?;
        s.migrate().await?;
        Arc::new(s)
    };
    let idem = idem::Idem::builder()
        .shared_store(store)
        .namespace(ns)
        .build()?;
    for (scene, part, ttl) in [
        ("order-create", "1001", 86_400),
        ("order-create", "1002", 86_400),
        ("pay", "p-1", 2),
        ("pay", "p-2", 2),
    ] {
        let ttl = Duration::from_secs(ttl);
        idem.guard(scene, &[&part])
            .ttl(ttl)
            .lease(ttl / 2)
            .run_fenced(|fence| async move {
                Ok::<_, idem::Error>(serde_json::json!({ "id": part, "fence": fence.get() }))
            })
            .await?;
    }
    let (started, mut running) = tokio::sync::mpsc::channel::<()>(1);
    let crashed = idem.clone();
    let task = tokio::spawn(async move {
        crashed
            .guard("refund", &[&"r-9"])
            .lease(Duration::from_secs(300))
            .run(|| async move {
                let _ = started.send(()).await;
                std::future::pending::<()>().await;
                Ok::<_, idem::Error>(0)
            })
            .await
    });
    running.recv().await;
    task.abort();
    println!("seeded namespace `{}`", idem.namespace());
    Ok(())
}
