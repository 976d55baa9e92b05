//! Two relays side by side on one outbox (PostgreSQL, NATS JetStream): they
//! share the work, no message is published by both (each relay's confirmed
//! ids are recorded per round and intersected), and messages enqueued with
//! per-business-id order reach the stream in that order.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream;
use idem::db::Dialect;
use idem::outbox::{MessageId, OutboxTable, RelayCounters as R};

use crate::outbox::brokers::{Target, nats_client, nats_url};
use crate::outbox::support::{OrderMsg, business_tx, enqueue_many, producer_db, relay_opts};

/// Business ids with ordered steps, and steps per id.
const IDS: usize = 60;
const STEPS: i64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_share_the_work_and_keep_per_business_id_order() {
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let target = Target::new(crate::outbox::brokers::Broker::Nats).await;
    let Target::Nats(stream) = &target else {
        unreachable!()
    };
    // Unordered messages, then ordered steps: one business transaction per
    // step, steps of one id committed one after another, ids concurrently.
    let plain = enqueue_many(&producer, "orders", 1000).await;
    let mut steps = tokio::task::JoinSet::new();
    for j in 0..IDS {
        let producer = producer.clone();
        steps.spawn(async move {
            for k in 1..=STEPS {
                let msg = OrderMsg {
                    id: String::new(),
                    topic: format!("step{k}"),
                    business_id: format!("b-{j}"),
                    step: k,
                    key: String::new(),
                };
                business_tx(&producer, OutboxTable::default().ordered(true), &msg, false).await;
            }
        });
    }
    while let Some(r) = steps.join_next().await {
        r.unwrap();
    }
    let total = plain.len() + IDS * STEPS as usize;
    type Rounds = Arc<Mutex<Vec<Vec<MessageId>>>>;
    let mut relays = Vec::new();
    let mut rounds: Vec<Rounds> = Vec::new();
    for name in ["relay-a", "relay-b"] {
        let seen: Rounds = Arc::default();
        let mut opts = relay_opts(name);
        opts.batch = 40;
        opts.lease = Duration::from_secs(30);
        opts.after_confirm = Some({
            let seen = seen.clone();
            Arc::new(move |ids: &[MessageId]| seen.lock().unwrap().push(ids.to_vec()))
        });
        relays.push(Arc::new(target.relay(producer.store.clone(), opts).await));
        rounds.push(seen);
    }
    let (stop, signal) = idem::consume::shutdown();
    let tasks: Vec<_> = relays
        .iter()
        .map(|r| {
            let (r, s) = (r.clone(), signal.clone());
            tokio::spawn(async move { r.run(s).await })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while crate::outbox::support::pending(&producer).await > 0 {
        assert!(std::time::Instant::now() < deadline, "not drained");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.trigger();
    for t in tasks {
        t.await.unwrap();
    }
    let sets: Vec<HashSet<MessageId>> = rounds
        .iter()
        .map(|r| r.lock().unwrap().iter().flatten().cloned().collect())
        .collect();
    let both = sets[0].intersection(&sets[1]).count();
    let (a, b) = (
        R::get(&relays[0].counters().published),
        R::get(&relays[1].counters().published),
    );
    eprintln!(
        "IDEM_OUTBOX two_relays db=Postgres broker=nats messages={total} relay_a={a} relay_b={b} \
         rounds_a={} rounds_b={} published_by_both={both}",
        rounds[0].lock().unwrap().len(),
        rounds[1].lock().unwrap().len()
    );
    assert_eq!(both, 0, "no message was published by both relays");
    assert_eq!(a + b, total as u64, "every message published once");
    assert!(a > 0 && b > 0, "both relays took work ({a}, {b})");
    // The stream's order: the steps of each business id ascend.
    let js = jetstream::new(nats_client(&nats_url()).await);
    let s = js.get_stream(&stream.name).await.unwrap();
    let n = s.clone().info().await.unwrap().state.messages;
    assert_eq!(n, total as u64);
    let mut last: HashMap<String, i64> = HashMap::new();
    let mut checked = 0;
    for seq in 1..=n {
        let m = s.get_raw_message(seq).await.unwrap();
        let msg: OrderMsg = serde_json::from_slice(&m.payload).unwrap();
        if msg.topic.starts_with("step") {
            let prev = last.insert(msg.business_id.clone(), msg.step).unwrap_or(0);
            assert_eq!(msg.step, prev + 1, "{} out of order", msg.business_id);
            checked += 1;
        }
    }
    assert_eq!(checked, IDS * STEPS as usize);
}
