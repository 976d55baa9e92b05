//! An order, end to end, as one trace: a POST's guarded call enqueues the
//! order's message, the relay publishes it (RabbitMQ or NATS JetStream), and
//! a `#[consume_once]` consumer processes it. Read back from the in-memory
//! exporter: the guard's `idem` span is a child of the request, `create` a
//! child of the guard, `send` a child of `create`, and `process` a child of
//! `create` linked to it, all in the request's trace.

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;
use idem::{Idem, MemoryStore};
use opentelemetry_sdk::trace::SpanData;
use tracing::Instrument as _;

use crate::consume::support::LogDb;
use crate::outbox::brokers::{Broker, Target};
use crate::outbox::support::{
    OrderMsg, consumer_db, consumer_handle, producer_db, relay_opts, relay_until_drained,
    try_business_tx,
};
use crate::support::{AppError, unique_ns};
use crate::trace::support::{Otel, Spans, attr, links};

/// The order service's guarded call: the order row and its message in one
/// transaction; the message id.
#[idem::idempotent(key = "trace-order:<order_no>", ttl = "1h", lease = "3s", handle = idem)]
pub(crate) async fn place_order(
    idem: &Idem,
    db: &LogDb,
    topic: &str,
    order_no: &str,
) -> Result<String, AppError> {
    let msg = OrderMsg {
        id: String::new(),
        topic: topic.to_owned(),
        business_id: order_no.to_owned(),
        step: 0,
        key: String::new(),
    };
    let id = try_business_tx(db, idem::outbox::OutboxTable::default(), &msg, false).await?;
    Ok(id.to_string())
}

/// A POST of `order_no`: the guarded call inside the request's span (the
/// application's server span, as an HTTP framework would open it).
pub(crate) async fn post_order(idem: &Idem, db: &LogDb, topic: &str, order_no: &str) -> String {
    let request = tracing::info_span!("POST /orders", otel.kind = "server");
    place_order(idem, db, topic, order_no)
        .instrument(request)
        .await
        .expect("the order is placed")
}

/// The stored `traceparent` of message `id`.
pub(crate) async fn stored_traceparent(db: &LogDb, id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT traceparent FROM idem_outbox WHERE id = $1")
        .bind(id)
        .fetch_one(db.pg())
        .await
        .unwrap()
}

/// The request, guard and `create` spans of message `id`, checked: one trace,
/// each the child of the one before, and the stored `traceparent` is the
/// `create` span's.
pub(crate) async fn producer_side<'a>(
    spans: &'a Spans,
    db: &LogDb,
    id: &str,
) -> (&'a SpanData, &'a SpanData) {
    let create = spans.one("create", &[("messaging.message.id", id)]);
    assert_eq!(
        attr(create, "messaging.operation.type").as_deref(),
        Some("create")
    );
    let guard = spans
        .by_id(create.parent_span_id)
        .expect("create has a parent");
    assert_eq!(guard.name, "idem");
    assert_eq!(attr(guard, "idem.technique").as_deref(), Some("idempotent"));
    assert_eq!(attr(guard, "idem.outcome").as_deref(), Some("executed"));
    assert_eq!(attr(guard, "idem.replayed").as_deref(), Some("false"));
    assert!(attr(guard, "idem.key_hash").is_some());
    let request = spans
        .by_id(guard.parent_span_id)
        .expect("the guard has a parent");
    assert_eq!(request.name, "POST /orders");
    let trace = request.span_context.trace_id();
    assert_eq!(guard.span_context.trace_id(), trace);
    assert_eq!(create.span_context.trace_id(), trace);
    let want = format!("00-{}-{}-01", trace, create.span_context.span_id());
    assert_eq!(
        stored_traceparent(db, id).await,
        Some(want),
        "the row keeps create's context"
    );
    (request, create)
}

/// `process` of `id` checked against its `create`: a child of it, linked to
/// it, in its trace, with the consumer's attributes and `outcome`.
pub(crate) fn checked_process(p: &SpanData, create: &SpanData, system: &str, outcome: &str) {
    let cx = &create.span_context;
    assert_eq!(p.parent_span_id, cx.span_id(), "process is create's child");
    assert!(p.parent_span_is_remote);
    assert_eq!(p.span_context.trace_id(), cx.trace_id());
    assert_eq!(links(p), vec![cx.span_id()], "and links to it");
    assert_eq!(attr(p, "messaging.system").as_deref(), Some(system));
    assert_eq!(
        attr(p, "messaging.operation.type").as_deref(),
        Some("process")
    );
    assert_eq!(
        attr(p, "messaging.consumer.group.name").as_deref(),
        Some("outbox-it")
    );
    assert_eq!(attr(p, "idem.outcome").as_deref(), Some(outcome));
}

async fn one_trace(broker: Broker) {
    let otel = Otel::install();
    let producer = Arc::new(producer_db(Dialect::Postgres).await);
    let consumer = Arc::new(consumer_db().await);
    let target = Target::new(broker).await;
    let guard = crate::support::handle(Arc::new(MemoryStore::new()), "trace-order");
    let order = format!("o-{}", uuid::Uuid::new_v4().simple());
    let topic = target.topic();
    let id = post_order(&guard, &producer, &topic, &order).await;
    // The client retries the POST: a replay, no second message.
    assert_eq!(post_order(&guard, &producer, &topic, &order).await, id);
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), relay_opts("trace"))
            .await,
    );
    relay_until_drained(relay, &producer, || true, Duration::from_secs(60)).await;
    let idem = consumer_handle(&consumer, &unique_ns("trace-c"));
    target
        .consume(consumer.clone(), idem, 1, Duration::from_secs(60))
        .await;

    let spans = otel.spans();
    eprintln!("IDEM_TRACE {} one order\n{}", target.broker(), spans.tree());
    let (request, create) = producer_side(&spans, &producer, &id).await;
    let replay = spans.one("idem", &[("idem.outcome", "replayed")]);
    assert_eq!(attr(replay, "idem.replayed").as_deref(), Some("true"));
    assert_ne!(
        replay.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(
        spans.with("create", &[]).len(),
        1,
        "the replay enqueued nothing"
    );
    let send = spans.one("send", &[("messaging.message.id", &id)]);
    assert_eq!(
        send.parent_span_id,
        create.span_context.span_id(),
        "send is create's child"
    );
    assert_eq!(
        send.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(
        attr(send, "messaging.system").as_deref(),
        Some(target.broker())
    );
    assert_eq!(attr(send, "idem.verdict").as_deref(), Some("confirmed"));
    let process = spans.one("process", &[("messaging.message.id", &id)]);
    checked_process(process, create, target.broker(), "executed");
    let consumed = spans.one("idem", &[("idem.technique", "consume")]);
    assert_eq!(consumed.parent_span_id, process.span_context.span_id());
    assert_eq!(attr(consumed, "idem.outcome").as_deref(), Some("executed"));
}

#[tokio::test]
async fn an_order_is_one_trace_through_rabbitmq() {
    one_trace(Broker::Rabbit).await;
}

#[tokio::test]
async fn an_order_is_one_trace_through_nats() {
    one_trace(Broker::Nats).await;
}
