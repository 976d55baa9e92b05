//! No configuration panics (issue 24 l): every duration a user can hand the
//! runtime (consumer options, store builders, handle settings, per-call
//! options) is either refused with a typed error or saturated, never a panic
//! in the arithmetic behind it (`d * 2`, `Instant + d`, a semaphore of
//! `usize::MAX` permits). Each case runs in its own task, so a panic fails
//! the test with its message instead of poisoning the others.

use std::time::Duration;

use idem::consume::{ConsumerOptions, Delivery, amqp, shutdown};
use idem::settings::Settings;
use idem::{Error, Idem, MemoryStore};

const HUGE: [Duration; 3] = [
    Duration::MAX,
    Duration::from_secs(u64::MAX / 2 + 1),
    Duration::from_secs(3650 * 86_400 + 1),
];

/// Runs `f` in a task: a panic there is this test's failure, with its text.
async fn no_panic<T: Send + 'static>(
    what: &str,
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    match tokio::spawn(f).await {
        Ok(v) => v,
        Err(e) => panic!("{what} panicked: {e}"),
    }
}

/// Refused as configuration, or accepted: anything but a panic or another error.
fn config_or_ok<T: std::fmt::Debug>(what: &str, r: Result<T, Error>) {
    match r {
        Ok(_) | Err(Error::Config(_)) => {}
        Err(e) => panic!("{what}: expected Ok or Error::Config, got {e:?}"),
    }
}

fn extreme_options(name: &str, d: Duration) -> ConsumerOptions {
    let mut o = ConsumerOptions::new(name);
    o.reconnect_min = d;
    o.reconnect_max = d;
    o.retry_delay = d;
    o.concurrency = usize::MAX;
    o.max_deliveries = u32::MAX;
    o
}

/// The RabbitMQ loop with every duration at the extremes, against a port
/// nobody listens on (the reconnect backoff runs at once) and against the
/// machine's broker (a session opens: `concurrency = usize::MAX`): it keeps
/// trying, stops on shutdown, and never panics.
#[cfg(feature = "rabbitmq")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_durations_at_the_extremes_never_panic() {
    for d in HUGE {
        for url in [
            "amqp://guest:guest@127.0.0.1:1/%2f".to_owned(),
            crate::consume::amqp_support::amqp_url(),
        ] {
            let (stop, signal) = shutdown();
            let opts = extreme_options("extreme", d);
            let connects = opts.counters.clone();
            let q = format!("idem-t-missing-{}", uuid::Uuid::new_v4().simple());
            let run = tokio::spawn(async move {
                amqp::run(&url, &q, opts, signal, |_: Delivery| async {
                    Ok::<(), String>(())
                })
                .await
            });
            tokio::time::sleep(Duration::from_millis(500)).await;
            stop.trigger();
            tokio::time::timeout(Duration::from_secs(10), run)
                .await
                .expect("the loop stops on shutdown")
                .unwrap_or_else(|e| panic!("the AMQP loop with {d:?} panicked: {e}"));
            drop(connects);
        }
    }
}

/// The same for NATS: a consumer that does not exist makes every session
/// fail, so the backoff runs.
#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_consumer_durations_at_the_extremes_never_panic() {
    let url = std::env::var("IDEM_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let client = async_nats::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("NATS at {url} is required: {e}"));
    for d in HUGE {
        let (stop, signal) = shutdown();
        let opts = extreme_options("extreme", d);
        let stream = format!("idem-t-missing-{}", uuid::Uuid::new_v4().simple());
        let client = client.clone();
        let run = tokio::spawn(async move {
            idem::consume::nats::run(client, &stream, "none", opts, signal, |_: Delivery| async {
                Ok::<(), String>(())
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.trigger();
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the loop stops on shutdown")
            .unwrap_or_else(|e| panic!("the NATS loop with {d:?} panicked: {e}"));
    }
}

/// The Redis builders' timeouts: connecting with the extremes either works
/// or is refused as configuration.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_builder_timeouts_at_the_extremes_never_panic() {
    use idem::store::StoreError;
    use idem::store::redis::{RedisClusterStore, RedisStore};
    for d in HUGE {
        let single = no_panic("RedisStoreBuilder::connect", async move {
            RedisStore::builder("redis://127.0.0.1:6379")
                .connect_timeout(d)
                .response_timeout(d)
                .connect()
                .await
                .map(drop)
        })
        .await;
        assert!(
            matches!(single, Ok(()) | Err(StoreError::Config(_))),
            "{d:?}: {single:?}"
        );
        let lazy = no_panic("RedisStoreBuilder::build_lazy", async move {
            RedisStore::builder("redis://127.0.0.1:6379")
                .connect_timeout(d)
                .response_timeout(d)
                .build_lazy()
                .map(drop)
        })
        .await;
        assert!(
            matches!(lazy, Ok(()) | Err(StoreError::Config(_))),
            "{d:?}: {lazy:?}"
        );
        // Nobody listens: refused (connection refused or configuration).
        let cluster = no_panic("RedisClusterStoreBuilder::connect", async move {
            RedisClusterStore::builder(["redis://127.0.0.1:1"])
                .connect_timeout(d)
                .response_timeout(d)
                .connect()
                .await
                .map(drop)
        })
        .await;
        assert!(cluster.is_err(), "{d:?}");
    }
}

/// The SQL store's acquire timeout.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_store_acquire_timeout_at_the_extremes_never_panics() {
    for d in HUGE {
        let r = no_panic("SqlStoreBuilder::connect", async move {
            let store = idem::store::sql::SqlStore::builder("sqlite::memory:")
                .acquire_timeout(d)
                .migrate(true)
                .connect()
                .await?;
            let idem = Idem::builder().store(store).build().expect("handle");
            idem.guard("acquire", &[&1u32])
                .run(|| async { Ok::<_, Error>(1) })
                .await
                .map_err(|e| idem::store::StoreError::config(e.to_string()))
                .map(drop)
        })
        .await;
        assert!(
            matches!(r, Ok(()) | Err(idem::store::StoreError::Config(_))),
            "{d:?}: {r:?}"
        );
    }
}

/// The handle's settings, each call's options, locks and tokens: refused
/// with `Error::Config` (or accepted), never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_and_call_durations_at_the_extremes_never_panic() {
    for d in HUGE {
        let built = no_panic("IdemBuilder::build", async move {
            let b = || Idem::builder().store(MemoryStore::new());
            let all = Settings {
                ttl: Some(d),
                lease: Some(d),
                wait: Some(d),
                max_hold: Some(d),
            };
            let each = [
                Settings {
                    ttl: Some(d),
                    ..Settings::NONE
                },
                Settings {
                    lease: Some(d),
                    ..Settings::NONE
                },
                Settings {
                    wait: Some(d),
                    ..Settings::NONE
                },
                Settings {
                    max_hold: Some(d),
                    ..Settings::NONE
                },
                all,
            ];
            let mut out = vec![
                b().op_timeout(d).build().map(drop),
                b().circuit_breaker(u32::MAX, d).build().map(drop),
            ];
            for s in each {
                out.push(b().defaults(s).build().map(drop));
                out.push(b().scene("s", s).build().map(drop));
            }
            out
        })
        .await;
        for r in built {
            config_or_ok("build", r);
        }
        let idem = Idem::builder().store(MemoryStore::new()).build().unwrap();
        let calls = no_panic("guard, lock and token options", async move {
            let body = || async { Ok::<_, Error>(1) };
            let g = |i: u32| idem.guard("extreme", &[&i]);
            let mut out = vec![
                g(1).ttl(d).run(body).await.map(drop),
                g(2).lease(d).run(body).await.map(drop),
                g(3).wait(d).run(body).await.map(drop),
                g(4).max_hold(d).run(body).await.map(drop),
                g(5).ttl(d)
                    .lease(d)
                    .wait(d)
                    .max_hold(d)
                    .run(body)
                    .await
                    .map(drop),
            ];
            let l = |i: u32| idem.lock("extreme-lock", &[&i]);
            let lbody = |_| async { Ok::<_, Error>(1) };
            out.push(l(1).lease(d).run(lbody).await.map(drop));
            out.push(l(2).wait(d).run(lbody).await.map(drop));
            out.push(l(3).max_hold(d).run(lbody).await.map(drop));
            out.push(idem.tokens().issue("extreme", d).await.map(drop));
            let t = idem
                .tokens()
                .issue("extreme", Duration::from_secs(60))
                .await?;
            let c = |t: &str| idem.tokens().consume("extreme", t);
            let tbody = |_| async { Ok::<_, Error>(1) };
            out.push(c(t.as_str()).lease(d).run(tbody).await.map(drop));
            Ok::<_, Error>(out)
        })
        .await
        .expect("issuing a token with a sane ttl");
        for (i, r) in calls.into_iter().enumerate() {
            config_or_ok(&format!("call {i} with {d:?}"), r);
        }
    }
    // Configuration text: a number of milliseconds that large is refused.
    let e = serde_json::from_str::<Settings>(&format!(r#"{{ "ttl": {} }}"#, u64::MAX));
    match e {
        Err(_) => {}
        Ok(s) => config_or_ok(
            "a ttl of u64::MAX ms",
            Idem::builder()
                .store(MemoryStore::new())
                .defaults(s)
                .build(),
        ),
    }
}
