//! One integration-test binary (fewer links); each folder covers one technique
//! or one store family, and `support/` holds what they share.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

mod conformance;
mod consume;
mod guard;
#[cfg(feature = "axum")]
mod http;
mod lock;
mod macros;
mod observability;
#[cfg(all(feature = "redis", feature = "sqlite"))]
mod outage;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox;
mod redis;
mod settings;
mod shop;
mod sim;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql;
mod state;
mod token;
#[cfg(all(
    feature = "otel",
    feature = "axum",
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod trace;
mod tx;
