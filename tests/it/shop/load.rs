//! Issue 32 item 6: the shop under load over real sockets, 30% of requests
//! repeating an earlier key, while its test-owned Redis is SIGKILLed and
//! restarted empty. CI size: 20 s, 16 connections; `IDEM_STRESS=1`: 60 s, 64.
//! Asserts: no 5xx, one order per key, every answer for a key the same body,
//! and the service back on Redis after the restart without being restarted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::shop::support::app::{IdemStore, server::Limits};
use crate::shop::support::start;
use crate::support::redis_server::RedisServer;

struct Size {
    run: Duration,
    connections: usize,
    kill_at: Duration,
    restart_at: Duration,
}

fn size() -> Size {
    if std::env::var("IDEM_STRESS").is_ok_and(|v| v == "1") {
        Size {
            run: Duration::from_secs(60),
            connections: 64,
            kill_at: Duration::from_secs(20),
            restart_at: Duration::from_secs(30),
        }
    } else {
        Size {
            run: Duration::from_secs(20),
            connections: 16,
            kill_at: Duration::from_secs(7),
            restart_at: Duration::from_secs(10),
        }
    }
}

/// One answer as the client saw it.
struct Seen {
    key: usize,
    status: u16,
    body: Bytes,
    latency: Duration,
}

/// A small deterministic generator per connection (no shared RNG).
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_with_duplicates_survives_a_redis_kill_and_empty_restart() {
    let size = size();
    let mut redis = RedisServer::start();
    let shop = start(
        IdemStore::Redis(redis.url()),
        Limits {
            max_connections: 4 * size.connections,
            ..Limits::default()
        },
    )
    .await;
    let base = shop.base();
    // Keys issued so far: a repeat picks one of the last 64 (so many repeats
    // overlap the first request in time).
    let issued: Arc<Mutex<Vec<usize>>> = Arc::default();
    let t0 = Instant::now();
    let deadline = t0 + size.run;
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..size.connections {
        let (issued, base) = (issued.clone(), base.clone());
        workers.spawn(async move {
            let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(1)
                .build_http();
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1));
            let mut seen = Vec::new();
            let mut n = 0;
            while Instant::now() < deadline {
                let key = {
                    let mut keys = issued.lock().unwrap();
                    if rng.next() % 100 < 30 && !keys.is_empty() {
                        let recent = keys.len().min(64);
                        keys[keys.len() - 1 - (rng.next() as usize % recent)]
                    } else {
                        let k = w * 10_000_000 + n;
                        n += 1;
                        keys.push(k);
                        k
                    }
                };
                let req = Request::builder()
                    .method(Method::POST)
                    .uri(format!("{base}/orders"))
                    .header("x-user-id", (key % 97).to_string())
                    .header("idempotency-key", format!("load-{key}"))
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(format!(
                        r#"{{"amount":{}}}"#,
                        100 + key % 1000
                    ))))
                    .unwrap();
                let start = Instant::now();
                let resp = tokio::time::timeout(Duration::from_secs(30), client.request(req))
                    .await
                    .expect("answered within 30 s")
                    .expect("request sent");
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await.expect("body").to_bytes();
                seen.push(Seen {
                    key,
                    status,
                    body,
                    latency: start.elapsed(),
                });
            }
            seen
        });
    }

    // The outage, on the test's own Redis.
    tokio::time::sleep_until((t0 + size.kill_at).into()).await;
    let killed = t0.elapsed();
    tokio::task::block_in_place(|| redis.kill());
    tokio::time::sleep_until((t0 + size.restart_at).into()).await;
    let restarted = t0.elapsed();
    tokio::task::block_in_place(|| redis.restart());
    let probe = shop.shop().idem.key("load-probe", &[]);
    let recovered = loop {
        if shop.shop().idem.inspect(&probe).await.is_ok() {
            break t0.elapsed();
        }
        assert!(
            t0.elapsed() < restarted + Duration::from_secs(15),
            "the shop did not reach the restarted Redis within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Past the recovery the store serves every call again: no more degraded
    // ones. A degraded call is counted when its body ends, so one that began
    // in the outage may end a little after it; 4 s lets such bodies finish on
    // a loaded machine (and leaves the run's last 6 s for calls on the store).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let settled = shop.shop().idem.stats();

    let mut seen = Vec::new();
    for w in workers.join_all().await {
        seen.extend(w);
    }
    let end = shop.shop().idem.stats();
    let elapsed = t0.elapsed();

    let mut statuses: HashMap<u16, usize> = HashMap::new();
    let mut bodies: HashMap<usize, Vec<&Bytes>> = HashMap::new();
    for s in &seen {
        *statuses.entry(s.status).or_default() += 1;
        if s.status == 201 {
            bodies.entry(s.key).or_default().push(&s.body);
        }
    }
    let mut lat: Vec<Duration> = seen.iter().map(|s| s.latency).collect();
    lat.sort();
    let keys = bodies.len();
    let repeats = seen.len()
        - seen
            .iter()
            .map(|s| s.key)
            .collect::<std::collections::HashSet<_>>()
            .len();
    let orders = shop.count("SELECT COUNT(*) FROM orders").await;
    let distinct = shop
        .count("SELECT COUNT(DISTINCT order_no) FROM orders")
        .await;
    let runs = shop
        .shop()
        .order_runs
        .load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "shop load: {} requests in {:.1} s ({:.0}/s) over {} connections, {repeats} repeats of a key; \
         p50 {:?}, p99 {:?}, max {:?}; statuses {statuses:?}; {keys} keys answered 201, {orders} orders \
         ({distinct} distinct), {runs} order body runs; Redis killed at {killed:.1?}, restarted empty at \
         {restarted:.1?}, store answering again at {recovered:.1?} ({:.1?} after the restart, {:.1?} after the kill); \
         calls after recovery: executed +{}, degraded +{}",
        seen.len(),
        elapsed.as_secs_f64(),
        seen.len() as f64 / size.run.as_secs_f64(),
        size.connections,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        lat.last().copied().unwrap_or_default(),
        recovered - restarted,
        recovered - killed,
        end.count("executed") - settled.count("executed"),
        end.count("degraded") - settled.count("degraded"),
    );
    let server_errors: usize = statuses
        .iter()
        .filter(|(s, _)| **s >= 500)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(server_errors, 0, "5xx answers: {statuses:?}");
    assert_eq!(
        statuses.get(&201).copied(),
        Some(seen.len()),
        "{statuses:?}"
    );
    assert_eq!(orders, distinct, "duplicate orders");
    assert_eq!(orders as usize, keys, "one order per key answered");
    for (key, bodies) in &bodies {
        assert!(
            bodies.windows(2).all(|w| w[0] == w[1]),
            "key {key}: the answers differ: {bodies:?}"
        );
    }
    assert!(
        repeats > seen.len() / 5,
        "{repeats} repeats in {}",
        seen.len()
    );
    assert!(
        end.count("executed") > settled.count("executed"),
        "no call ran on the store after the recovery"
    );
    assert_eq!(
        end.count("degraded"),
        settled.count("degraded"),
        "degraded calls after the store was back"
    );
}
