//! What a guarded call costs on a single Redis node: its round trips per
//! path (fenced; the unfenced ones are `redis::native`'s) and the memory of
//! one finished record.

use std::time::Duration;

use idem::store::redis::RedisStore;
use idem::store::{Owned, Owner, Store};
use idem::{Error, How, Idem};

use crate::redis::store::claimed;
use crate::support::redis_server::{Monitor, RedisServer};

/// Round trips per path of a fenced body (`run_fenced`; `run` is `redis::native`'s),
/// counted through `MONITOR` (commands run inside scripts are excluded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_path() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let idem = Idem::builder()
        .store(store.clone())
        .namespace("rt")
        .build()
        .unwrap();
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take();

    let call = |id: &'static str| {
        let idem = idem.clone();
        async move {
            idem.guard("order-create", &[&id])
                .run_fenced(|_| async { Ok::<_, Error>("x".repeat(200)) })
                .await
                .unwrap()
                .how()
        }
    };
    assert_eq!(call("a").await, How::Executed);
    let first = mon.take();
    assert_eq!(call("a").await, How::Replayed);
    let dup = mon.take();
    println!("round trips: first call {first:?}, duplicate {dup:?}");
    assert_eq!(
        first,
        ["EVALSHA", "EVALSHA"],
        "first call = claim + complete"
    );
    assert_eq!(
        dup,
        ["EVALSHA"],
        "duplicate = one claim that reads the result"
    );

    // A failing body: claim + release.
    let _ = idem
        .guard("order-create", &[&"b"])
        .run_fenced(|_| async { Err::<(), _>(Error::Config("no".into())) })
        .await;
    assert_eq!(mon.take(), ["EVALSHA", "EVALSHA"]);
    // After the server forgot the scripts: one NOSCRIPT detour, then back to 1.
    server.cli(&["SCRIPT", "FLUSH"]);
    let _ = mon.take();
    assert_eq!(call("a").await, How::Replayed);
    assert_eq!(mon.take(), ["EVALSHA", "SCRIPT", "EVALSHA"]);
    assert_eq!(call("a").await, How::Replayed);
    assert_eq!(mon.take(), ["EVALSHA"]);
}

/// Redis memory of one finished record with a 41-byte idem key and a 200-byte
/// stored result, beyond the key and the result themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_record() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let key = format!(
        "shop:order-create:{}",
        "7".repeat(41 - "shop:order-create:".len())
    );
    assert_eq!(key.len(), 41);
    let o = Owner::fresh();
    claimed(&store, &key, o, Duration::from_secs(30)).await;
    let payload = vec![b'r'; 200];
    assert_eq!(
        store
            .complete(&key, o, &payload, Duration::from_secs(3600))
            .await
            .unwrap(),
        Owned::Applied
    );
    let rk = String::from_utf8(store.record_key(&key)).unwrap();
    let usage: usize = server
        .cli(&["MEMORY", "USAGE", &rk])
        .trim()
        .parse()
        .unwrap();
    let overhead = usage - 41 - 200;
    println!(
        "MEMORY USAGE {usage} bytes for a 41-byte key + 200-byte result: {overhead} bytes of overhead"
    );
    assert!(
        overhead <= 128,
        "{overhead} bytes beyond key + result (budget 128)"
    );
}
