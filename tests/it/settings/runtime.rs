//! Run-time settings (issue 16 item 4): durations written as expressions,
//! checked when the call runs; handle defaults and per-scene overrides from
//! configuration, and their precedence (code > scene > handle > built-in).

use std::time::Duration;

use idem::settings::{Config, Settings};
use idem::store::RecordState;
use idem::{Error, Idem, MemoryStore};

use crate::macros::support::{AppError, Counter};

const ORDER_TTL: Duration = Duration::from_secs(2 * 3600);

/// What a service might keep its tuned values in.
struct Tuning {
    lease: Duration,
}

impl Tuning {
    fn lease(&self) -> Duration {
        self.lease
    }
}

fn handle_with(config: Config) -> Idem {
    Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .config(config)
        .build()
        .expect("memory handle")
}

/// The record's time left, for a key of scene `scene` and one part.
async fn remaining(idem: &Idem, scene: &str, part: u64) -> Duration {
    match idem.inspect(&idem.key(scene, &[&part])).await.unwrap() {
        Some(RecordState::Done { remaining, .. }) => remaining,
        other => panic!("no finished record for {scene}:{part}: {other:?}"),
    }
}

/// `got` is `want` minus at most the time the test took (generous slack).
fn about(got: Duration, want: Duration) {
    assert!(
        got <= want && got + Duration::from_secs(60) > want,
        "remaining {got:?}, expected about {want:?}"
    );
}

// A const, a constructor call and a method on a parameter: all typed
// `Duration` by rustc, evaluated per call.
#[idem::idempotent(key = "set-expr:<id>", ttl = ORDER_TTL, lease = tuning.lease(), wait = Duration::from_secs(4), handle = idem)]
async fn with_expressions(
    idem: &Idem,
    tuning: &Tuning,
    runs: &Counter,
    id: u64,
) -> Result<usize, AppError> {
    Ok(runs.hit())
}

#[tokio::test]
async fn expressions_set_the_durations_of_each_call() {
    let idem = handle_with(Config::default());
    let runs = Counter::default();
    let tuning = Tuning {
        lease: Duration::from_secs(3),
    };
    for _ in 0..3 {
        assert_eq!(with_expressions(&idem, &tuning, &runs, 1).await.unwrap(), 1);
    }
    assert_eq!(runs.get(), 1);
    assert_eq!(idem.stats().count("replayed"), 2);
    about(remaining(&idem, "set-expr", 1).await, ORDER_TTL);
}

#[tokio::test]
async fn bad_expression_values_are_config_errors_naming_the_function() {
    let idem = handle_with(Config::default());
    let runs = Counter::default();
    // Each is refused before any store traffic; the body never runs.
    let cases = [
        (Duration::ZERO, "`lease` must be greater than zero"),
        (ORDER_TTL, "must be shorter than ttl"),
        (
            Duration::from_secs(4000 * 86_400),
            "longer than the maximum",
        ),
    ];
    for (lease, why) in cases {
        let tuning = Tuning { lease };
        match with_expressions(&idem, &tuning, &runs, 2).await {
            Err(AppError::Idem(Error::Config(m))) => {
                assert!(m.contains("with_expressions`"), "names the function: {m}");
                assert!(m.contains(why), "{why}: {m}");
            }
            other => panic!("lease {lease:?}: expected Error::Config, got {other:?}"),
        }
    }
    assert_eq!(runs.get(), 0);
    assert_eq!(idem.stats().count("executed"), 0);
}

#[idem::idempotent(key = "set-hold:<id>", lease = "2s", max_hold = hold, handle = idem)]
async fn with_max_hold(idem: &Idem, hold: Duration, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

#[tokio::test]
async fn an_expression_max_hold_below_the_lease_is_refused() {
    let idem = handle_with(Config::default());
    let e = with_max_hold(&idem, Duration::from_secs(1), 1).await;
    assert!(
        matches!(&e, Err(AppError::Idem(Error::Config(m))) if m.contains("with_max_hold`") && m.contains("max_hold")),
        "{e:?}"
    );
    assert_eq!(
        with_max_hold(&idem, Duration::from_secs(60), 1)
            .await
            .unwrap(),
        1
    );
}

// No duration written: the configuration decides.
#[idem::idempotent(key = "set-plain:<id>", handle = idem)]
async fn plain(idem: &Idem, runs: &Counter, id: u64) -> Result<usize, AppError> {
    Ok(runs.hit())
}

// A literal in code.
#[idem::idempotent(key = "set-plain:<id>", ttl = "3h", handle = idem)]
async fn written(idem: &Idem, id: u64) -> Result<u64, AppError> {
    Ok(id)
}

fn ttl(d: Duration) -> Settings {
    Settings {
        ttl: Some(d),
        ..Settings::default()
    }
}

#[tokio::test]
async fn precedence_is_code_then_scene_then_handle_then_built_in() {
    let hour = Duration::from_secs(3600);
    let runs = Counter::default();

    // Built-in: 24 h.
    let idem = handle_with(Config::default());
    plain(&idem, &runs, 1).await.unwrap();
    about(remaining(&idem, "set-plain", 1).await, 24 * hour);

    // Handle default over the built-in.
    let idem = Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .defaults(ttl(hour))
        .build()
        .unwrap();
    plain(&idem, &runs, 1).await.unwrap();
    about(remaining(&idem, "set-plain", 1).await, hour);
    // ... and for the non-macro guard of another scene.
    idem.guard("set-other", &[&1u64])
        .run(|| async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    about(remaining(&idem, "set-other", 1).await, hour);

    // The scene's entry over the handle default; other scenes keep the default.
    let config = Config {
        defaults: ttl(hour),
        scenes: [("set-plain".to_owned(), ttl(2 * hour))].into(),
        ..Config::default()
    };
    let idem = handle_with(config.clone());
    plain(&idem, &runs, 1).await.unwrap();
    about(remaining(&idem, "set-plain", 1).await, 2 * hour);
    let out = idem
        .guard("set-other", &[&1u64])
        .run(|| async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    assert!(out.is_stored());
    about(remaining(&idem, "set-other", 1).await, hour);

    // Code over the scene's entry: the literal, and a guard's setter.
    let idem = handle_with(config);
    written(&idem, 1).await.unwrap();
    about(remaining(&idem, "set-plain", 1).await, 3 * hour);
    idem.guard("set-other", &[&1u64])
        .ttl(5 * hour)
        .run(|| async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    about(remaining(&idem, "set-other", 1).await, 5 * hour);
    assert_eq!(runs.get(), 3);
}

#[tokio::test]
async fn configuration_deserializes_and_contradictions_fail_the_build() {
    let config: Config = serde_json::from_str(
        r#"{ "defaults": { "ttl": "90m", "wait": 1500 },
             "scenes": { "set-plain": { "ttl": "2 days", "lease": "1m" } } }"#,
    )
    .unwrap();
    let idem = handle_with(config);
    let runs = Counter::default();
    plain(&idem, &runs, 1).await.unwrap();
    about(
        remaining(&idem, "set-plain", 1).await,
        Duration::from_secs(2 * 86_400),
    );
    idem.guard("set-other", &[&1u64])
        .run(|| async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    about(
        remaining(&idem, "set-other", 1).await,
        Duration::from_secs(90 * 60),
    );

    // A scene whose lease outlives its ttl is refused at build, by name.
    let bad: Config = serde_json::from_str(r#"{ "scenes": { "pay": { "ttl": "10s" } } }"#).unwrap();
    let e = Idem::builder()
        .store(MemoryStore::new())
        .config(bad)
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("scene `pay`") && m.contains("shorter than ttl")),
        "{e}"
    );
    // Unknown fields and zero durations never reach the handle.
    for bad in [
        r#"{ "defaults": { "tll": "1h" } }"#,
        r#"{ "defaults": { "lease": "0s" } }"#,
        r#"{ "disable": true }"#,
    ] {
        assert!(serde_json::from_str::<Config>(bad).is_err(), "{bad}");
    }
}
