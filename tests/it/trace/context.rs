//! Trace context beside the spans: a batch's `process` span links to each
//! message's producer; and with no OpenTelemetry layer at all (what a build
//! without the `otel` feature sees) the context the caller set for its task
//! is stored in the outbox row and reaches the consumer as headers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::consume::{ConsumerOptions, Delivery, amqp, nats, shutdown};
use idem::db::Dialect;
use idem::observe::TraceContext;
use idem::outbox::Outbox;
use tracing::Instrument as _;

use crate::consume::batch_support::wait_until;
use crate::consume::batch_support::{body, pg_batch};
use crate::consume::support::LogDb;
use crate::outbox::brokers::{Broker, Target, nats_client};
use crate::outbox::support::{producer_db, relay_opts, relay_until_drained};
use crate::trace::flow::stored_traceparent;
use crate::trace::support::{Otel, attr, links};

/// Enqueues a refund of `order_no` on `topic` in its own transaction.
async fn enqueue(db: &LogDb, topic: &str, order_no: &str) -> String {
    let mut tx = db.pg().begin().await.unwrap();
    let id = Outbox::enqueue(&mut *tx, topic, order_no, &body(order_no, false))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id.to_string()
}

/// Three orders, each enqueued in its own request (three traces), consumed
/// by a batch loop as one batch: its `process` span carries the batch size
/// and links to each message's `create` span.
#[tokio::test]
async fn a_batch_links_to_each_message_s_producer() {
    let otel = Otel::install();
    let producer = producer_db(Dialect::Postgres).await;
    let target = Target::new(Broker::Rabbit).await;
    let topic = target.topic();
    let mut ids = Vec::new();
    for i in 0..3 {
        let request = tracing::info_span!("POST /refunds");
        ids.push(
            enqueue(&producer, &topic, &format!("r-{i}"))
                .instrument(request)
                .await,
        );
    }
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), relay_opts("trace-batch"))
            .await,
    );
    relay_until_drained(relay, &producer, || true, Duration::from_secs(60)).await;

    let consumer = LogDb::new(Dialect::Postgres).await;
    let idem = crate::support::handle(Arc::new(consumer.store.clone()), "trace-batch");
    let batch = pg_batch(consumer.pg().clone(), &idem, 3, None).linger(Duration::from_secs(2));
    let opts = ConsumerOptions::new("trace-batch");
    let (stop, signal) = shutdown();
    let loop_ = tokio::spawn(async move {
        amqp::run_batch(
            &crate::consume::amqp_support::amqp_url(),
            &topic,
            opts,
            signal,
            batch,
        )
        .await
    });
    for _ in 0..3000 {
        if consumer.refunds().await == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(consumer.refunds().await, 3);
    stop.trigger();
    loop_.await.unwrap();

    let spans = otel.spans();
    eprintln!("IDEM_TRACE rabbitmq batch\n{}", spans.tree());
    // The three messages normally form one batch; a loaded machine may split
    // them (the linger is a wait, not a promise). Whatever the split, each
    // `process` span links to exactly the producers of its own messages.
    let process = spans.with(
        "process",
        &[("messaging.consumer.group.name", "trace-batch")],
    );
    assert!(!process.is_empty(), "{}", spans.tree());
    for p in &process {
        let count = attr(p, "messaging.batch.message_count").map_or(1, |n| n.parse().unwrap());
        assert_eq!(links(p).len(), count, "one link per message of the batch");
    }
    let mut want: Vec<_> = ids
        .iter()
        .map(|id| {
            spans
                .one("create", &[("messaging.message.id", id)])
                .span_context
                .span_id()
        })
        .collect();
    let mut got: Vec<_> = process.iter().flat_map(|p| links(p)).collect();
    want.sort_by_key(|s| s.to_string());
    got.sort_by_key(|s| s.to_string());
    assert_eq!(got, want, "the batch links to each producer");
    let traces: std::collections::HashSet<_> = process
        .iter()
        .flat_map(|p| p.links.links.iter())
        .map(|l| l.span_context.trace_id())
        .collect();
    assert_eq!(traces.len(), 3, "three requests, three traces");
}

const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// Enqueued under a task-scoped context, with no subscriber at all: the row
/// holds it, the relay sends it, the consumer's `Delivery::trace` has it.
async fn travels_without_a_layer(broker: Broker) {
    let producer = producer_db(Dialect::Postgres).await;
    let target = Target::new(broker).await;
    let topic = target.topic();
    let cx = TraceContext::parse(TP, Some("idem=1,congo=t61rcWkgMzE"));
    let id = TraceContext::scope(cx.clone(), enqueue(&producer, &topic, "r-plain")).await;
    assert_eq!(
        stored_traceparent(&producer, &id).await.as_deref(),
        Some(TP)
    );
    let plain = enqueue(&producer, &topic, "r-none").await;
    assert_eq!(
        stored_traceparent(&producer, &plain).await,
        None,
        "no context, none stored"
    );
    let relay = Arc::new(
        target
            .relay(producer.store.clone(), relay_opts("trace-plain"))
            .await,
    );
    relay_until_drained(relay, &producer, || true, Duration::from_secs(60)).await;

    let seen: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let handler = {
        let seen = seen.clone();
        move |d: Delivery| {
            seen.lock().unwrap().push(d);
            async { Ok::<(), String>(()) }
        }
    };
    let (stop, signal) = shutdown();
    let opts = ConsumerOptions::new("outbox-it");
    let loop_ = match &target {
        Target::Rabbit(q, _) => {
            let (url, q) = (crate::consume::amqp_support::amqp_url(), q.name.clone());
            tokio::spawn(async move { amqp::run(&url, &q, opts, signal, handler).await })
        }
        Target::Nats(s) => {
            let (c, name) = (
                nats_client(&crate::outbox::brokers::nats_url()).await,
                s.name.clone(),
            );
            tokio::spawn(
                async move { nats::run(c, &name, "outbox-it", opts, signal, handler).await },
            )
        }
    };
    wait_until("both deliveries", || seen.lock().unwrap().len() >= 2).await;
    stop.trigger();
    loop_.await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let of = |id: &str| {
        seen.iter()
            .find(|d| d.id.as_deref() == Some(id))
            .unwrap()
            .trace
            .clone()
    };
    assert_eq!(of(&id), cx, "traceparent and tracestate arrived as headers");
    assert_eq!(of(&plain), None);
}

#[tokio::test]
async fn context_travels_without_a_layer_through_rabbitmq() {
    travels_without_a_layer(Broker::Rabbit).await;
}

#[tokio::test]
async fn context_travels_without_a_layer_through_nats() {
    travels_without_a_layer(Broker::Nats).await;
}

/// The `Idempotency-Key` layer makes the request's `traceparent` the task's
/// context: what an enqueue in the handler stores without an OpenTelemetry
/// span. A malformed header is ignored; the request is served.
#[tokio::test]
async fn the_http_layer_scopes_the_request_s_traceparent() {
    use axum::routing::post;
    let idem = crate::support::handle(Arc::new(idem::MemoryStore::new()), "trace-http");
    let handler = || async {
        TraceContext::scoped()
            .map(|c| format!("{} {}", c.traceparent(), c.tracestate().unwrap_or("-")))
            .unwrap_or_else(|| "none".into())
    };
    let app = axum::Router::new()
        .route("/orders", post(handler))
        .layer(idem::http::IdempotencyLayer::new(idem).scene("orders"));
    let server = crate::http::support::serve(app).await;
    let client = crate::http::support::Client::new(&server);
    let send = |key: &'static str, tp: &'static str| {
        let client = client.clone();
        async move {
            let headers: [(&str, &[u8]); 3] = [
                ("idempotency-key", key.as_bytes()),
                ("traceparent", tp.as_bytes()),
                ("tracestate", b"k=v"),
            ];
            client
                .send(http::Method::POST, "/orders", &headers, "{}")
                .await
                .body
        }
    };
    assert_eq!(send("k-1", TP).await, format!("{TP} k=v"));
    assert_eq!(send("k-2", "00-garbage").await, "none");
}
