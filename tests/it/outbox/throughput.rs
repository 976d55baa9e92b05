//! The relay's throughput against a raw publish loop on this machine, per
//! broker: the same messages, published in batches of 200 with the broker's
//! confirmations, by the relay (claim, publish, mark sent on PostgreSQL) and
//! by a loop that only publishes. Printed for the notes; the assertion is
//! only that both moved every message (timing on a shared machine is no
//! test). 2,000 messages (10,000 with `IDEM_STRESS=1`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::db::Dialect;
use idem::outbox::RelayCounters as R;
use lapin::BasicProperties;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};

use crate::outbox::brokers::{Broker, Target, TestStream, nats_client, nats_url};
use crate::outbox::support::{producer_db, relay_opts, relay_until_drained};
use crate::support::sql::stress;

const BATCH: usize = 200;

/// Messages per second of the relay draining `n` enqueued messages.
async fn relay_rate(broker: Broker, n: usize) -> f64 {
    let producer = producer_db(Dialect::Postgres).await;
    let target = Target::new(broker).await;
    let topic = target.topic();
    let pool = producer.pg().clone();
    let mut tx = pool.begin().await.unwrap();
    for i in 0..n {
        let payload = format!("{{\"topic\":\"{topic}\",\"business_id\":\"o-{i}\",\"step\":0}}");
        idem::outbox::Outbox::enqueue(&mut tx, &topic, &format!("o-{i}"), payload.as_bytes())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let mut opts = relay_opts("throughput");
    opts.batch = BATCH;
    opts.lease = Duration::from_secs(30);
    let relay = Arc::new(target.relay(producer.store.clone(), opts).await);
    let t0 = Instant::now();
    relay_until_drained(relay.clone(), &producer, || true, Duration::from_secs(240)).await;
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(R::get(&relay.counters().published), n as u64);
    n as f64 / secs
}

/// Messages per second of a loop publishing `n` messages in confirmed batches.
async fn raw_rate(broker: Broker, n: usize) -> f64 {
    let payload = br#"{"topic":"t","business_id":"o-1","step":0}"#;
    match broker {
        Broker::Rabbit => {
            let Target::Rabbit(q, _) = Target::new(Broker::Rabbit).await else {
                unreachable!()
            };
            let (conn, ch) = crate::consume::amqp_support::channel().await;
            ch.confirm_select(ConfirmSelectOptions::default())
                .await
                .unwrap();
            let t0 = Instant::now();
            for start in (0..n).step_by(BATCH) {
                let mut confirms = Vec::new();
                for i in start..(start + BATCH).min(n) {
                    let props = BasicProperties::default()
                        .with_message_id(format!("raw-{i}").into())
                        .with_delivery_mode(2);
                    let opts = BasicPublishOptions {
                        mandatory: true,
                        ..Default::default()
                    };
                    let c = ch
                        .basic_publish("".into(), q.name.as_str().into(), opts, payload, props)
                        .await
                        .unwrap();
                    confirms.push(c);
                }
                for c in confirms {
                    assert!(c.await.unwrap().is_ack());
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            let _ = conn.close(200, "bye".into()).await;
            n as f64 / secs
        }
        Broker::Nats => {
            let s = TestStream::new(&nats_url(), None).await;
            let js = async_nats::jetstream::new(nats_client(&nats_url()).await);
            let t0 = Instant::now();
            for start in (0..n).step_by(BATCH) {
                let mut acks = Vec::new();
                for i in start..(start + BATCH).min(n) {
                    let mut h = async_nats::HeaderMap::new();
                    h.insert("Nats-Msg-Id", format!("raw-{i}").as_str());
                    let subject = format!("{}orders", s.prefix);
                    acks.push(
                        js.publish_with_headers(subject, h, payload.to_vec().into())
                            .await
                            .unwrap(),
                    );
                }
                for a in acks {
                    a.await.unwrap();
                }
            }
            n as f64 / t0.elapsed().as_secs_f64()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_throughput_against_a_raw_publish_loop() {
    let n = if stress() { 10_000 } else { 2_000 };
    for broker in [Broker::Rabbit, Broker::Nats] {
        let raw = raw_rate(broker, n).await;
        let relay = relay_rate(broker, n).await;
        eprintln!(
            "IDEM_OUTBOX throughput db=Postgres broker={broker:?} messages={n} batch={BATCH} \
             raw_publish={raw:.0}/s relay={relay:.0}/s relay/raw={:.2}",
            relay / raw
        );
        assert!(raw > 0.0 && relay > 0.0);
    }
}
