//! The commit-to-confirm latency of the outbox relay at light load (part of
//! `--outbox`, see `outbox_relay.rs`): one message per transaction every
//! 20 ms on PostgreSQL, timed from each commit to the broker's confirmation
//! of its message (the relay's after-confirm hook), on NATS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idem::outbox::{MessageId, Relay, RelayOptions};

use crate::consume::nats_url;
use crate::outbox_relay::PAYLOAD;

/// Milliseconds from each commit to the broker's confirmation of its
/// message, one message per transaction every 20 ms.
pub(crate) async fn latency(
    prefix: &str,
    store: &idem::store::sql::SqlStore,
    pool: &sqlx::PgPool,
    wake: bool,
) -> anyhow::Result<Vec<f64>> {
    sqlx::query("TRUNCATE idem_outbox").execute(pool).await?;
    let confirmed: Arc<Mutex<HashMap<MessageId, Instant>>> = Arc::default();
    let mut opts = RelayOptions::new("latency");
    opts.wake_on_commit = wake;
    opts.after_confirm = Some({
        let confirmed = confirmed.clone();
        Arc::new(move |ids: &[MessageId]| {
            let now = Instant::now();
            let mut c = confirmed.lock().unwrap();
            for id in ids {
                c.insert(id.clone(), now);
            }
        })
    });
    let client = async_nats::connect(nats_url()).await?;
    let p = idem::outbox::nats::NatsPublisher::new(client).subject_prefix(prefix.to_owned());
    let relay = Arc::new(Relay::new(store.clone(), p, opts));
    let (stop, signal) = idem::consume::shutdown();
    let task = tokio::spawn({
        let relay = relay.clone();
        async move { relay.run(signal).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let tag = crate::rand_u64();
    let mut commits = Vec::new();
    for i in 0..150 {
        let mut tx = pool.begin().await?;
        let id = idem::outbox::Outbox::enqueue(&mut tx, "orders", &format!("l-{tag}-{i}"), PAYLOAD)
            .await?;
        tx.commit().await?;
        commits.push((id, Instant::now()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t0 = Instant::now();
    while confirmed.lock().unwrap().len() < commits.len() {
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(30),
            "latency run stalled"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.trigger();
    task.await?;
    let c = confirmed.lock().unwrap();
    Ok(commits
        .iter()
        .map(|(id, at)| c[id].saturating_duration_since(*at).as_secs_f64() * 1e3)
        .collect())
}
