//! The HTTP layer under the handle's run-time settings: durations the layer
//! does not set come from the configuration for its scene (the layer's own
//! win), and a disabled handle lets every request through, counted.

use std::time::Duration;

use http::StatusCode;
use idem::settings::{Config, Settings};
use idem::store::RecordState;
use idem::{Idem, MemoryStore};

use crate::http::statuses::{Orders, layer, start};

fn handle_with(config: Config) -> Idem {
    Idem::builder()
        .store(MemoryStore::new())
        .namespace("it")
        .config(config)
        .build()
        .expect("memory handle")
}

/// The stored response's time left (scene `orders`, anonymous scope).
async fn remaining(idem: &Idem, key: &str) -> Duration {
    match idem
        .inspect(&idem.key("orders", &[&"", &key]))
        .await
        .unwrap()
    {
        Some(RecordState::Done { remaining, .. }) => remaining,
        other => panic!("no stored response for {key}: {other:?}"),
    }
}

fn about(got: Duration, want: Duration) {
    assert!(
        got <= want && got + Duration::from_secs(60) > want,
        "remaining {got:?}, expected about {want:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_takes_unset_durations_from_its_scene() {
    let hour = Duration::from_secs(3600);
    let scene = Settings {
        ttl: Some(2 * hour),
        ..Settings::default()
    };
    let config = Config {
        scenes: [("orders".to_owned(), scene)].into(),
        ..Config::default()
    };
    let idem = handle_with(config.clone());
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    for _ in 0..2 {
        let a = client.post("/orders", "cfg-1", "{}").await;
        assert_eq!(a.status, StatusCode::CREATED);
    }
    assert_eq!(orders.runs.get(), 1);
    about(remaining(&idem, "cfg-1").await, 2 * hour);

    // The layer's own ttl wins over the scene's.
    let idem = handle_with(config);
    let (_s, client, _) = start(Orders::default(), layer(&idem).ttl(3 * hour)).await;
    assert_eq!(
        client.post("/orders", "cfg-2", "{}").await.status,
        StatusCode::CREATED
    );
    about(remaining(&idem, "cfg-2").await, 3 * hour);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_handle_passes_every_request_through() {
    let idem = handle_with(Config {
        disabled: true,
        ..Config::default()
    });
    let (_s, client, orders) = start(Orders::default(), layer(&idem)).await;
    for _ in 0..3 {
        let a = client.post("/orders", "off-1", "{}").await;
        assert_eq!(a.status, StatusCode::CREATED);
        assert!(!a.is_replay());
    }
    assert_eq!(orders.runs.get(), 3);
    assert_eq!(idem.stats().count("unguarded"), 3);
}
