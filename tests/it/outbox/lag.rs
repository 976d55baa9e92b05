//! The relay's lag gauge, `idem_outbox_lag_seconds{outbox}`: the age of the
//! oldest pending message that is due, read with the other gauges. During
//! a broker outage nothing is published and the messages stay due, so the
//! lag is their age; once the table is drained it is 0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::db::Dialect;
use idem::outbox::{OutboxTable, Relay};
use metrics::{
    Counter, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

use crate::outbox::support::{OrderMsg, business_tx, producer_db, relay_opts};

/// Every value each gauge was set to, by name and labels.
#[derive(Default)]
struct Gauges(Mutex<BTreeMap<String, Arc<Values>>>);

#[derive(Default)]
struct Values(Mutex<Vec<f64>>);

impl GaugeFn for Values {
    fn increment(&self, v: f64) {
        let mut all = self.0.lock().unwrap();
        let last = all.last().copied().unwrap_or(0.0);
        all.push(last + v);
    }
    fn decrement(&self, v: f64) {
        self.increment(-v);
    }
    fn set(&self, v: f64) {
        self.0.lock().unwrap().push(v);
    }
}

impl Recorder for Gauges {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        Gauge::from_arc(self.0.lock().unwrap().entry(name).or_default().clone())
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

impl Gauges {
    fn values(&self, name: &str) -> Vec<f64> {
        let all = self.0.lock().unwrap();
        all.get(name)
            .map(|v| v.0.lock().unwrap().clone())
            .unwrap_or_default()
    }
}

#[test]
fn the_lag_is_the_oldest_due_message_age() {
    let rec = Gauges::default();
    metrics::with_local_recorder(&rec, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let db = producer_db(Dialect::Postgres).await;
            for i in 0..3 {
                let msg = OrderMsg {
                    id: String::new(),
                    topic: "lag.created".into(),
                    business_id: format!("o-{i}"),
                    step: 0,
                    key: String::new(),
                };
                business_tx(&db, OutboxTable::default(), &msg, false).await;
            }
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            // A broker nobody listens for: every batch is given back, the
            // messages stay pending and due.
            let mut opts = relay_opts("lag");
            opts.stats_every = Duration::from_millis(100);
            let broker = idem::outbox::amqp::AmqpPublisher::new("amqp://127.0.0.1:1/%2f");
            let relay = Arc::new(Relay::new(db.store.clone(), broker, opts));
            let (stop, signal) = idem::consume::shutdown();
            let task = tokio::spawn({
                let relay = relay.clone();
                async move { relay.run(signal).await }
            });
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            stop.trigger();
            tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .expect("the relay stops")
                .unwrap();
            // Once nothing is pending, the lag is 0 (a stopped relay reads
            // its gauges once more on its way out).
            db.exec("UPDATE idem_outbox SET state = 1").await;
            let (stop, signal) = idem::consume::shutdown();
            stop.trigger();
            relay.run(signal).await;
        })
    });
    let lag = rec.values("idem_outbox_lag_seconds{outbox=idem_outbox}");
    let oldest = rec.values("idem_outbox_oldest_seconds{outbox=idem_outbox}");
    assert!(
        !lag.is_empty() && !oldest.is_empty(),
        "lag {lag:?}, oldest {oldest:?}"
    );
    // The first reading comes before the first claim: every message is due,
    // 1.5 s old or more.
    assert!(lag[0] >= 1.5 && lag[0] < 60.0, "{lag:?}");
    // Due messages are pending ones: never older than the oldest pending.
    for (l, o) in lag.iter().zip(&oldest) {
        assert!(*l <= o + 0.5, "lag {lag:?}, oldest {oldest:?}");
    }
    assert_eq!(lag.last().copied(), Some(0.0), "{lag:?}");
}
