//! Poison messages without a `message_id` on a classic RabbitMQ queue
//! (issue 24 k). A classic queue sends no `x-delivery-count`, so the loop
//! counts failures itself; it used to count them only per message id, and a
//! message published without one was redelivered forever.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem::consume::{ConsumerOptions, Counters, Delivery, amqp, shutdown};
use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;

use crate::consume::amqp_support::{TestQueue, amqp_url, channel, depth};

/// Two different poison messages without ids (and a good one) on a classic
/// queue with a dead-letter queue: each fails `max_deliveries` = 3 times, is
/// handed to `on_poison` once on its third attempt and dead-lettered; the good
/// one is acknowledged; nothing loops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_without_message_id_on_a_classic_queue_is_dead_lettered() {
    let (conn, ch) = channel().await;
    let q = TestQueue::new(&ch, true).await;
    for body in [&b"poison-a"[..], b"poison-b", b"good"] {
        ch.basic_publish(
            "".into(),
            q.name.as_str().into(),
            BasicPublishOptions::default(),
            body,
            BasicProperties::default(),
        )
        .await
        .unwrap();
    }
    let hooked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut opts = ConsumerOptions::new("poison-no-id");
    opts.max_deliveries = 3;
    opts.retry_delay = Duration::from_millis(20);
    opts.on_poison = Some({
        let hooked = hooked.clone();
        Arc::new(move |p: &idem::consume::Poisoned| {
            hooked.lock().unwrap().push((
                p.delivery.id.clone(),
                p.delivery.attempt,
                p.delivery.payload.clone(),
            ));
        })
    });
    let counters = opts.counters.clone();
    let attempts = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handler = {
        let attempts = attempts.clone();
        move |d: Delivery| {
            let attempts = attempts.clone();
            async move {
                attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if d.payload.starts_with(b"poison") {
                    Err(format!(
                        "cannot handle {:?}",
                        String::from_utf8_lossy(&d.payload)
                    ))
                } else {
                    Ok(())
                }
            }
        }
    };
    let (stop, signal) = shutdown();
    let consumer = tokio::spawn({
        let name = q.name.clone();
        async move { amqp::run(&amqp_url(), &name, opts, signal, handler).await }
    });
    // Done when both poison messages were given up on; a loop that
    // redelivers for ever is stopped after 20 s and fails below.
    let deadline = Instant::now() + Duration::from_secs(20);
    while Counters::get(&counters.poisoned) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.trigger();
    consumer.await.expect("the loop ends on shutdown");
    let mut hooked = hooked.lock().unwrap().clone();
    hooked.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(
        hooked,
        [
            (None, 3, b"poison-a".to_vec()),
            (None, 3, b"poison-b".to_vec())
        ],
        "each poison message reaches the hook once, on its third delivery \
         (deliveries so far: {})",
        attempts.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(Counters::get(&counters.poisoned), 2);
    assert_eq!(Counters::get(&counters.retried), 4);
    assert_eq!(Counters::get(&counters.acked), 1);
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 7);
    assert_eq!(depth(&ch, &q.name).await, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while depth(&ch, q.dead()).await != 2 {
        assert!(
            Instant::now() < deadline,
            "both poison messages reach the dead-letter queue"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = conn.close(200, "bye".into()).await;
}
