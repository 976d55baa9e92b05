use super::super::IDEMPOTENT_REPLAYED;
use super::*;

fn replayed(first: &StoredResponse) -> StoredResponse {
    serde_json::from_str(&serde_json::to_string(first).unwrap()).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn round_trip_marks_replays() {
    let first = StoredResponse::capture((
        StatusCode::CREATED,
        [("location", "/orders/1"), ("x-a", "b")],
        "{\"id\":1}",
    ))
    .await
    .unwrap();
    assert!(!first.is_replay());
    let again = replayed(&first);
    assert!(again.is_replay());
    let r = again.into_response();
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.headers()["location"], "/orders/1");
    assert!(r.headers().get("x-a").is_none(), "not on the allow-list");
    assert_eq!(r.headers()[IDEMPOTENT_REPLAYED], "true");
    let keep = Keeping::new().header(HeaderName::from_static("x-a"));
    let with = StoredResponse::capture_with((StatusCode::OK, [("x-a", "b")]), &keep)
        .await
        .unwrap();
    assert_eq!(replayed(&with).into_response().headers()["x-a"], "b");
    let bin = StoredResponse::capture(vec![0xffu8, 0]).await.unwrap();
    assert_eq!(replayed(&bin).body, StoredBody::Bytes(vec![0xff, 0]));
}

#[tokio::test(flavor = "current_thread")]
async fn capture_never_keeps_cookies_dates_lengths_or_hop_by_hop_headers() {
    let first = (
        StatusCode::CREATED,
        [
            ("set-cookie", "session=secret"),
            ("date", "Tue, 01 Dec 2026 22:00:00 GMT"),
            ("connection", "close"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("content-length", "7"),
            ("etag", "\"v1\""),
        ],
        "created",
    );
    // Even a user who allow-lists them does not get them stored.
    let mut keep = Keeping::new();
    for name in NEVER_REPLAYED_FOR_TEST {
        keep = keep.header(HeaderName::from_static(name));
    }
    let stored = StoredResponse::capture_with(first, &keep).await.unwrap();
    let mut names: Vec<&str> = stored.headers.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    // The body's own `content-type` and the `etag`: the allow-listed ones.
    assert_eq!(
        names,
        ["content-type", "etag"],
        "only allow-listed, replayable headers"
    );
    // A record from before the rule (or another writer) is filtered on replay.
    let mut old = replayed(&stored);
    old.headers
        .push(("set-cookie".into(), "session=old".into()));
    old.headers.push(("date".into(), "yesterday".into()));
    let r = old.into_response();
    assert!(r.headers().get("set-cookie").is_none() && r.headers().get("date").is_none());
    assert_eq!(r.headers()["etag"], "\"v1\"");
}

const NEVER_REPLAYED_FOR_TEST: [&str; 6] = [
    "set-cookie",
    "date",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
];

#[tokio::test(flavor = "current_thread")]
async fn capture_over_the_limit_keeps_status_and_headers_without_the_body() {
    let big = "a".repeat(DEFAULT_STORED_BODY_LIMIT + 1);
    let first = StoredResponse::capture((StatusCode::CREATED, [("location", "/o/1")], big.clone()))
        .await
        .expect("a body over the limit is still captured");
    assert_eq!(first.body_not_kept(), Some(Unkept::OverLimit));
    let json = serde_json::to_string(&first).unwrap();
    assert!(json.len() < 200, "the record holds no body: {json}");
    // The first caller gets the whole response.
    let r = first.clone().into_response();
    assert_eq!(r.status(), StatusCode::CREATED);
    let body = r.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body.len(), big.len());
    // A repeat gets a problem naming the first status and the limit.
    let r = replayed(&first).into_response();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(r.headers()["location"], "/o/1");
    assert_eq!(r.headers()[IDEMPOTENT_REPLAYED], "true");
    let body = r.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["original_status"], 201, "{v}");
    assert_eq!(v["body_limit"], DEFAULT_STORED_BODY_LIMIT, "{v}");
    assert_eq!(v["not_kept"], "over_limit", "{v}");
}
