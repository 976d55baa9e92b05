//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

#[cfg(all(feature = "redis", feature = "sqlite"))]
mod burst;
mod conformance;
mod conformance_limits;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp_loop;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp_support;
#[cfg(all(feature = "postgres", any(feature = "rabbitmq", feature = "nats")))]
mod consume_handler;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod consume_log;
#[cfg(all(feature = "postgres", feature = "nats"))]
mod consume_nats;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod consume_support;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod engine_keys;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod engine_state;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod engine_tokens;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod engine_tx;
mod engine_tx_front;
mod guard_safety;
#[cfg(feature = "axum")]
mod http;
#[cfg(feature = "axum")]
mod http_concurrency;
#[cfg(feature = "axum")]
mod http_macro;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod http_shop;
#[cfg(feature = "axum")]
mod http_support;
mod keys;
mod lock;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod lock_fenced;
mod memory;
mod observability;
mod observability_defaults;
#[cfg(all(feature = "redis", feature = "sqlite"))]
mod outage;
#[cfg(feature = "redis")]
mod redis_cluster;
#[cfg(all(feature = "redis", feature = "sqlite"))]
mod redis_faults;
#[cfg(feature = "redis")]
mod redis_native;
#[cfg(feature = "redis")]
mod redis_procs;
#[cfg(feature = "redis")]
mod redis_store;
#[cfg(feature = "redis-tls")]
mod redis_tls;
mod settings;
mod settings_disabled;
#[cfg(feature = "axum")]
mod settings_http;
mod sim;
mod state_cas;
mod token;
mod unanswered_claims;

mod macro_backstop;
mod macro_basic;
mod macro_concurrency;
mod macro_fence;
mod macro_report;
mod macro_support;
// The SQL suites run against all three databases at once.
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_backstop;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_backstop_text;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_builder;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_conformance;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_layered;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_procs;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_round_trips;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_store;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod sql_support;
mod sql_token;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_machine;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_support;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_guard;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_helpers;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_macro;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_recipes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_support;
