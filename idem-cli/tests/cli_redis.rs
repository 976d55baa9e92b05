//! `idem` on the shared Redis, under a random key prefix and namespace, and
//! the errors every store shares: usage (2), unreachable (3), redacted
//! passwords.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idem::store::redis::RedisStore;
use support::{call, crashed_claim_story, handle, id, idem};

const REDIS: &str = "redis://127.0.0.1:6379";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_inspect_forget_stats_purge_verify() {
    let prefix = format!("cli{}:", id());
    let store = RedisStore::builder(REDIS)
        .prefix(prefix.clone())
        .connect()
        .await
        .unwrap();
    let store: Arc<dyn idem::Store> = Arc::new(store);
    let ns = format!("ns{}", id());
    let h = handle(Arc::clone(&store), &ns);
    let args = ["--store", REDIS, "--prefix", &prefix];
    let dead_store = RedisStore::builder(REDIS)
        .prefix(prefix.clone())
        .connect()
        .await
        .unwrap();
    crashed_claim_story(handle(Arc::new(dead_store), &ns), &h, &args).await;
    for part in ["a", "b"] {
        assert!(call(&h, "pay", part, Duration::from_secs(60), 1).await);
    }
    let stats = idem(&[&["stats", "--json", "-n", &ns], &args[..]].concat());
    assert_eq!(stats.code, 0, "{}", stats.err);
    let v = stats.json();
    let scenes = v["scenes"].as_array().unwrap();
    let done: Vec<(&str, u64)> = scenes
        .iter()
        .map(|s| (s["scene"].as_str().unwrap(), s["done"].as_u64().unwrap()))
        .collect();
    assert_eq!(done, [("order-create", 1), ("pay", 2)]);
    let purge = idem(&[&["purge", "--dry-run", "--json"], &args[..]].concat()).json();
    assert_eq!(purge["total"].as_u64(), Some(0), "Redis expires natively");
    let verify = idem(&[&["verify", "--json"], &args[..]].concat());
    assert_eq!(verify.code, 0, "{}{}", verify.out, verify.err);
    assert_eq!(verify.json()["ok"], true);
    for part in ["a", "b"] {
        let k = idem::Key::from_parts(&ns, "pay", &[&part]);
        store.forget(k.as_str()).await.unwrap();
    }
    let k = idem::Key::from_parts(&ns, "order-create", &[&"42"]);
    store.forget(k.as_str()).await.unwrap();
}

#[test]
fn usage_unreachable_and_redacted_passwords() {
    let none = idem(&["inspect", "k"]);
    assert_eq!(none.code, 2, "no store given: {}", none.err);
    assert!(none.err.contains("REDIS_URL"), "{}", none.err);
    let scheme = idem(&["--store", "ftp://u:hunter22@x/", "inspect", "k"]);
    assert_eq!(scheme.code, 2, "{}", scheme.err);
    assert!(!scheme.err.contains("hunter22"), "{}", scheme.err);
    let bad = idem(&["inspect"]);
    assert_eq!(bad.code, 2, "clap's usage error: {}", bad.err);
    for url in [
        "redis://:hunter22@127.0.0.1:1",
        "postgres://postgres:hunter22@127.0.0.1:1/test",
    ] {
        let down = idem(&["--store", url, "--timeout", "5", "verify"]);
        assert_eq!(down.code, 3, "{url}: {}{}", down.out, down.err);
        assert!(
            !down.err.contains("hunter22") && !down.out.contains("hunter22"),
            "{}",
            down.err
        );
        assert!(down.err.contains("***"), "{}", down.err);
    }
}
