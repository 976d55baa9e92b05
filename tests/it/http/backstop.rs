//! The layer's `backstop` / `on_conflict`, as the attribute has them, on
//! PostgreSQL, MariaDB and SQLite: after the front store lost a request's
//! record, a retry's insert hits the unique index, and the client gets the
//! first order (stored for later repeats), not an error and not a second
//! order; without `on_conflict` a `409` problem; a response carrying another
//! error releases the key.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::StatusCode;
use idem::db::Dialect;
use idem::http::{ErrorCause, IdempotencyLayer};
use idem::{FaultyStore, Idem, MemoryStore};

use crate::http::support::{Client, serve};
use crate::support::sql::{Biz, Fixture};

/// The handler's error answer: its cause travels with the response.
fn failed(status: StatusCode, e: sqlx::Error) -> Response {
    let mut r = (status, "could not place the order").into_response();
    r.extensions_mut().insert(ErrorCause::new(e));
    r
}

/// `POST /orders` inserting the body's order number; `runs` counts handler runs.
fn app(idem: &Idem, biz: &Biz, runs: &Arc<AtomicUsize>, lookup: bool) -> Router {
    let (b, runs) = (biz.clone(), runs.clone());
    let handler = move |body: String| {
        let (b, runs) = (b.clone(), runs.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            if body == "bad" {
                return failed(StatusCode::UNPROCESSABLE_ENTITY, sqlx::Error::RowNotFound);
            }
            match b.insert(&body).await {
                Ok(id) => (StatusCode::CREATED, format!("order {id}")).into_response(),
                Err(e) => failed(StatusCode::CONFLICT, e),
            }
        }
    };
    let mut layer = IdempotencyLayer::new(idem.clone())
        .scene("order-create")
        .backstop(biz.index.clone());
    if lookup {
        let b = biz.clone();
        layer = layer.on_conflict(move |req: http::Request<bytes::Bytes>| {
            let b = b.clone();
            async move {
                // The lookup's copy of the request carries the key the layer
                // checked, as the handler's request does.
                if req
                    .extensions()
                    .get::<idem::http::IdempotencyKey>()
                    .is_none()
                {
                    return StatusCode::PRECONDITION_FAILED.into_response();
                }
                let no = String::from_utf8_lossy(req.body()).into_owned();
                match b.find(&no).await {
                    Ok(id) => (StatusCode::CREATED, format!("order {id}")).into_response(),
                    Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }
        });
    }
    Router::new().route("/orders", post(handler)).layer(layer)
}

crate::support::sql::per_database!(
    lost_record_retry_gets_the_first_order_from_on_conflict,
    lost_record_retry_without_lookup_is_a_409_and_no_second_order,
);

async fn setup(d: Dialect) -> (Fixture, Biz, Arc<FaultyStore<MemoryStore>>, Idem) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(crate::support::unique_ns("httpbk"))
        .constraints(biz.catalog())
        .build()
        .unwrap();
    (fx, biz, store, idem)
}

async fn lost_record_retry_gets_the_first_order_from_on_conflict(d: Dialect) {
    let (_fx, biz, store, idem) = setup(d).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let server = serve(app(&idem, &biz, &runs, true)).await;
    let client = Client::new(&server);
    let first = client.post("/orders", "k-1", "o-1").await;
    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    store.lose_all_keys().await.unwrap();
    let second = client.post("/orders", "k-1", "o-1").await;
    assert_eq!(
        (second.status, &second.body),
        (StatusCode::CREATED, &first.body),
        "the existing order, not the handler's 409"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the retry ran into the index"
    );
    assert_eq!(idem.stats().backstop_hits(), 1);
    // Stored: the next repeat is a plain replay, without a handler run.
    let third = client.post("/orders", "k-1", "o-1").await;
    assert!(third.is_replay(), "{third:?}");
    assert_eq!(third.body, first.body);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(biz.count().await, 1, "one order");
}

async fn lost_record_retry_without_lookup_is_a_409_and_no_second_order(d: Dialect) {
    let (_fx, biz, store, idem) = setup(d).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let server = serve(app(&idem, &biz, &runs, false)).await;
    let client = Client::new(&server);
    assert_eq!(
        client.post("/orders", "k-1", "o-1").await.status,
        StatusCode::CREATED
    );
    store.lose_all_keys().await.unwrap();
    let second = client.post("/orders", "k-1", "o-1").await;
    second.assert_problem(StatusCode::CONFLICT);
    assert!(
        !second.body.contains("order-create:"),
        "no internal key: {}",
        second.body
    );
    assert_eq!(idem.stats().backstop_hits(), 1);
    assert_eq!(biz.count().await, 1, "one order");
    // A response whose cause is not the constraint's violation releases the
    // key, although a 422 is otherwise kept: the next request runs again.
    for run in 1..=2 {
        let bad = client.post("/orders", "k-2", "bad").await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(!bad.is_replay());
        assert_eq!(runs.load(Ordering::SeqCst), 2 + run);
    }
    assert_eq!(idem.stats().backstop_hits(), 1);
}
