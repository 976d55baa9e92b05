//! The server's work per path on a single Redis node: the commands each script
//! runs, read through `MONITOR` (issue 29). A `redis.call` costs a script
//! about a microsecond on Redis 7, more than a whole native `SET`, so a script
//! that reads the clock or a key's time left where it needs neither is a
//! defect this file finds. The token's life (its key's expiry from `issue`)
//! must survive every step that rewrites the value.

use std::time::Duration;

use idem::store::redis::RedisStore;
use idem::store::{Claim, Owner, Store};
use idem::{Error, How, Idem};

use crate::redis::store::req;
use crate::support::redis_server::{Monitor, RedisServer};

const EVAL: &str = "EVALSHA";

/// What idem sent and its scripts ran, without this test's own probes
/// (`redis-cli` reads of the token's key).
fn idems(seen: Vec<String>) -> Vec<String> {
    const PROBES: [&str; 4] = ["KEYS", "PTTL", "GET", "EXISTS"];
    seen.into_iter()
        .filter(|c| !PROBES.contains(&c.as_str()))
        .collect()
}

/// A fenced first call, its duplicate, and a claim held by someone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_scripts_run_only_what_each_answer_needs() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let idem = Idem::builder()
        .store(store.clone())
        .namespace("sc")
        .build()
        .unwrap();
    let call = |id: &'static str| {
        idem.guard("order-create", &[&id])
            .run_fenced(|_| async { Ok::<_, Error>("x".repeat(200)) })
    };
    // Loads the scripts, so every script below is one `EVALSHA`.
    call("warm").await.unwrap();
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take_with_scripts();

    assert_eq!(call("a").await.unwrap().how(), How::Executed);
    assert_eq!(
        mon.take_with_scripts(),
        [
            EVAL, "lua:GET", "lua:TIME", "lua:SET", EVAL, "lua:GET", "lua:SET"
        ],
        "claim (read, clock for the fence, write) + complete (read, write)"
    );
    assert_eq!(call("a").await.unwrap().how(), How::Replayed);
    assert_eq!(
        mon.take_with_scripts(),
        [EVAL, "lua:GET"],
        "a finished record's duplicate reads the value, not its time left"
    );

    // Held by another owner: the claim reads the holder's time left, which
    // caps the waiter's sleep.
    let lease = Duration::from_secs(30);
    let key = "sc:held:1";
    assert!(matches!(
        store.claim(req(key, Owner::fresh(), lease)).await.unwrap(),
        Claim::Claimed { .. }
    ));
    let _ = mon.take_with_scripts();
    match store.claim(req(key, Owner::fresh(), lease)).await.unwrap() {
        Claim::Busy { remaining, .. } => {
            assert!(!remaining.is_zero() && remaining <= lease, "{remaining:?}")
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    assert_eq!(mon.take_with_scripts(), [EVAL, "lua:GET", "lua:PTTL"]);
}

/// The token's steps, pinned command by command: an issue is one native
/// `SET`; a consume whose body succeeds is the take script alone (one
/// `EVALSHA`: read, clock for the fence, one `SETRANGE` that leaves the
/// spent tombstone and keeps the key's expiry); a failed body adds the
/// give-back (which shrinks the value, so it carries the time left over); a
/// second submission reads and answers. The key keeps the life `issue` gave
/// it through every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_scripts_keep_the_token_life_with_the_fewest_calls() {
    let server = RedisServer::start();
    let idem = server.handle("tk").await;
    let tokens = idem.tokens();
    let life = Duration::from_secs(60);
    // Loads the take and give-back scripts.
    let warm = tokens.issue("token:warm", life).await.unwrap();
    let failed = tokens
        .consume("token:warm", warm.as_str())
        .run(|_| async { Err::<(), _>(Error::Config("give it back".into())) })
        .await;
    assert!(failed.is_err());
    let mut mon = Monitor::attach(server.port);
    let _ = mon.take_with_scripts();

    let before = server.cli(&["KEYS", "*"]);
    let token = tokens.issue("token:form", life).await.unwrap();
    assert_eq!(idems(mon.take_with_scripts()), ["SET"]);
    let after = server.cli(&["KEYS", "*"]);
    let new: Vec<&str> = after.lines().filter(|k| !before.contains(k)).collect();
    let [key] = new[..] else {
        panic!("one new key expected: {before:?} -> {after:?}")
    };
    let ttl = |server: &RedisServer| -> u64 { server.cli(&["PTTL", key]).trim().parse().unwrap() };
    let within_life = |ms: u64, at: &str| {
        assert!(
            ms > 50_000 && ms <= 60_000,
            "{at}: the token's key has {ms} ms left of its 60 s life"
        )
    };
    const TAKE: [&str; 4] = [EVAL, "lua:GET", "lua:TIME", "lua:SETRANGE"];

    // A body that fails: spent by the take, given back after the body.
    let out = tokens
        .consume("token:form", token.as_str())
        .run(|_| async {
            within_life(ttl(&server), "spent");
            let value = server.cli(&["GET", key]);
            assert!(value.starts_with('S'), "spent: {value:?}");
            Err::<(), _>(Error::Config("failed".into()))
        })
        .await;
    assert!(matches!(out, Err(Error::Config(_))), "{out:?}");
    let seen = idems(mon.take_with_scripts());
    assert_eq!(&seen[..4], TAKE, "the take: {seen:?}");
    assert_eq!(
        &seen[4..],
        [EVAL, "lua:GET", "lua:PTTL", "lua:SET"],
        "the give-back: {seen:?}"
    );
    assert_eq!(server.cli(&["GET", key]).trim(), "I");
    within_life(ttl(&server), "given back");

    // Taken again and the body succeeds: the take is the whole consume.
    let out = tokens
        .consume("token:form", token.as_str())
        .run(|_| async { Ok::<_, Error>(7) })
        .await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(idems(mon.take_with_scripts()), TAKE);
    assert!(server.cli(&["GET", key]).starts_with('S'));
    within_life(ttl(&server), "spent by a success");
    // A second submission reads the tombstone and is refused.
    let again = tokens
        .consume("token:form", token.as_str())
        .run(|_| async { Ok::<_, Error>(8) })
        .await;
    assert!(
        matches!(again, Err(Error::TokenInvalid { .. })),
        "{again:?}"
    );
    assert_eq!(idems(mon.take_with_scripts()), [EVAL, "lua:GET"]);
}
