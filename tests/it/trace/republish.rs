//! A relay SIGKILLed between the broker's confirmation and its sent mark
//! (the outbox crash test's child relay): the message is published again
//! after its lease with the same stored creation context, and the
//! consumer's second `process` span, `duplicate_message`, is a child of and
//! linked to the same `create` span as the first, in the request's trace.

use std::sync::Arc;
use std::time::Duration;

use idem::MemoryStore;
use idem::consume::Counters;
use idem::db::Dialect;

use crate::outbox::brokers::{Broker, Target};
use crate::outbox::support::{
    applied_ids, consumer_db, consumer_handle, producer_db, relay_opts, relay_until_drained,
};
use crate::support::unique_ns;
use crate::trace::flow::{checked_process, post_order, producer_side};
use crate::trace::support::Otel;

#[tokio::test]
async fn a_republished_message_s_duplicate_links_to_the_original_request() {
    let otel = Otel::install();
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let consumer = Arc::new(consumer_db().await);
    let target = Target::new(Broker::Rabbit).await;
    let guard = crate::support::handle(Arc::new(MemoryStore::new()), "trace-crash");
    let topic = target.topic();
    let id = post_order(&guard, &producer, &topic, "o-crash").await;
    let (schema, queue) = (producer.schema().to_owned(), topic.clone());
    let unmarked =
        tokio::task::spawn_blocking(move || crate::outbox::crash::run_and_kill(&schema, &queue))
            .await
            .unwrap();
    assert_eq!(unmarked, 1, "the killed relay had the message confirmed");
    let sent = producer
        .scalar("SELECT COUNT(*) FROM idem_outbox WHERE state = 1")
        .await;
    assert_eq!(sent, 0, "and never marked it sent");
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), relay_opts("trace-final"))
            .await,
    );
    relay_until_drained(relay, &producer, || true, Duration::from_secs(60)).await;
    let idem = consumer_handle(&consumer, &unique_ns("trace-crash-c"));
    let c = target
        .consume(consumer.clone(), idem, 1, Duration::from_secs(60))
        .await;
    assert_eq!(
        Counters::get(&c.delivered),
        2,
        "the broker held both publishes"
    );
    assert_eq!(
        applied_ids(&consumer).await,
        (vec![id.clone()], 1),
        "applied once"
    );

    let spans = otel.spans();
    eprintln!("IDEM_TRACE rabbitmq republished\n{}", spans.tree());
    let (_, create) = producer_side(&spans, &producer, &id).await;
    let first = spans.one(
        "process",
        &[("messaging.message.id", &id), ("idem.outcome", "executed")],
    );
    checked_process(first, create, "rabbitmq", "executed");
    let dup = spans.one(
        "process",
        &[
            ("messaging.message.id", &id),
            ("idem.outcome", "duplicate_message"),
        ],
    );
    checked_process(dup, create, "rabbitmq", "duplicate_message");
}
