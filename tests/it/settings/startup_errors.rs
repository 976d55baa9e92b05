//! A store that cannot be reached at start-up: the error names the store, its
//! URL with the password hidden, and what to check (issue 27 item 6).

use idem::sql::SqlStore;
use idem::store::redis::RedisStore;

/// A local port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a spare port");
    l.local_addr().expect("its address").port()
}

fn assert_names_store_url_and_check(msg: &str, store: &str, shown_url: &str) {
    assert!(msg.contains(store), "no store name in: {msg}");
    assert!(msg.contains(shown_url), "no redacted URL in: {msg}");
    assert!(!msg.contains("s3cret"), "the password leaked: {msg}");
    assert!(
        msg.contains("check that the server is running"),
        "no hint in: {msg}"
    );
}

#[tokio::test]
async fn redis_down_at_start_up_names_the_store_the_url_and_what_to_check() {
    let port = closed_port();
    let url = format!("redis://:s3cret@127.0.0.1:{port}/0");
    let err = RedisStore::connect(&url)
        .await
        .expect_err("nothing listens there");
    let shown = format!("redis://***@127.0.0.1:{port}/0");
    assert_names_store_url_and_check(&err.to_string(), "Redis store", &shown);
    // `fn main() -> Result<(), Box<dyn Error>>` prints the Debug form: one line.
    let debug = format!("{err:?}");
    assert_names_store_url_and_check(&debug, "Redis store", &shown);
    assert!(!debug.contains("Reason {"), "a bare struct: {debug}");
    // As `idem::Error` (what `?` in a service's start-up gives).
    let e: idem::Error = err.into();
    assert_names_store_url_and_check(&e.to_string(), "Redis store", &shown);
}

#[tokio::test]
async fn postgres_down_at_start_up_names_the_store_the_url_and_what_to_check() {
    let port = closed_port();
    let url = format!("postgres://app:s3cret@127.0.0.1:{port}/test");
    let shown = format!("postgres://***@127.0.0.1:{port}/test");
    let err = SqlStore::connect(&url)
        .await
        .expect_err("nothing listens there");
    assert_names_store_url_and_check(&err.to_string(), "PostgreSQL store", &shown);
    let err = SqlStore::connect_postgres(&url)
        .await
        .expect_err("nothing listens there");
    assert_names_store_url_and_check(&err.to_string(), "PostgreSQL store", &shown);
}
