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
    support::forget_if_story(&*store, &format!("{ns}:forget-if:1")).await;
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

/// The documented classes: a malformed URL is usage (2); a refused port
/// (Redis, PostgreSQL, MariaDB alike, at once), missing or wrong
/// credentials, a missing SQLite file and a silent --metrics endpoint are
/// unreachable (3), each named as itself; with --json, the error is JSON.
#[test]
fn exit_codes_by_class_and_json_errors() {
    for url in [
        "redis://127.0.0.1:notaport",
        "postgres://postgres@127.0.0.1:notaport/test",
    ] {
        let bad = idem(&["--store", url, "inspect", "k"]);
        assert_eq!(bad.code, 2, "{url}: {}", bad.err);
    }
    for url in [
        "redis://127.0.0.1:1",
        "postgres://postgres@127.0.0.1:1/test",
        "mysql://root@127.0.0.1:1/test",
    ] {
        let started = std::time::Instant::now();
        let down = idem(&["--store", url, "--timeout", "20s", "inspect", "k"]);
        assert_eq!(down.code, 3, "{url}: {}", down.err);
        // Not the pool's 10 s wait (generous: a loaded machine).
        assert!(started.elapsed() < Duration::from_secs(8), "{url}");
        assert!(!down.err.contains("pool timed out"), "{}", down.err);
    }
    let json = idem(&["--json", "--store", "redis://127.0.0.1:1", "inspect", "k"]);
    assert_eq!(json.code, 3);
    assert_eq!(json.json()["error"]["class"], "unreachable", "{}", json.out);
    let usage = idem(&["--json", "inspect"]);
    assert_eq!(
        (usage.code, usage.json()["error"]["code"].as_u64()),
        (2, Some(2))
    );

    let path = std::env::temp_dir().join(format!("idem-cli-missing-{}.db", id()));
    let url = format!("sqlite:{}", path.display());
    for cmd in [&["inspect", "k"][..], &["verify"]] {
        let missing = idem(&[&["--store", url.as_str()][..], cmd].concat());
        assert_eq!(missing.code, 3, "{}", missing.err);
        assert!(
            missing.err.contains("no SQLite database"),
            "{}",
            missing.err
        );
        assert!(!path.exists(), "{cmd:?} created {path:?}");
    }

    // A --metrics endpoint that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = format!("http://{}/metrics", silent.local_addr().unwrap());
    let args = [
        "--store",
        REDIS,
        "--timeout",
        "1s",
        "stats",
        "--metrics",
        &metrics,
    ];
    let hung = idem(&args);
    assert_eq!(hung.code, 3, "{}", hung.err);
    assert!(hung.err.contains("metrics endpoint"), "{}", hung.err);
    assert!(!hung.err.contains("the store at"), "{}", hung.err);
}

/// A Redis that wants a password: none and a wrong one are one class (3).
#[test]
fn missing_and_wrong_passwords_are_one_class() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--requirepass", "s3cretpw"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server on PATH");
    let url = |auth: &str| format!("redis://{auth}127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let codes: Vec<i32> = [url(""), url(":wrongpw@")]
        .iter()
        .map(|u| idem(&["--store", u, "inspect", "k"]).code)
        .collect();
    let good = idem(&["--store", &url(":s3cretpw@"), "inspect", "k"]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(codes, [3, 3]);
    assert_eq!(good.code, 1, "no record: {}", good.err);
}
