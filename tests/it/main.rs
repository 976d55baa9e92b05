//! One integration-test binary (fewer links); each module covers one area.
#![allow(unreachable_pub)] // test-only modules share helpers with `pub`

mod support;

#[cfg(all(feature = "redis", feature = "sqlite"))]
mod burst;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod config_extremes;
mod conformance;
mod conformance_limits;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp_loop;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
mod consume_amqp_poison;
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
mod http_headers;
#[cfg(feature = "axum")]
mod http_keep;
#[cfg(feature = "axum")]
mod http_keys;
#[cfg(feature = "axum")]
mod http_macro;
#[cfg(feature = "axum")]
mod http_private;
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
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_brokers;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_crash;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_e2e;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_enqueue;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_faults;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_relays;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_support;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
mod outbox_throughput;
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
#[cfg(feature = "redis")]
mod redis_versions;
mod settings;
mod settings_disabled;
#[cfg(feature = "axum")]
mod settings_http;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod shop_browser;
#[cfg(all(
    feature = "axum",
    feature = "sqlite",
    feature = "redis",
    feature = "postgres"
))]
mod shop_demo_twice;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod shop_errors;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod shop_limits;
#[cfg(all(feature = "axum", feature = "sqlite", feature = "redis"))]
mod shop_load;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod shop_stock;
#[cfg(all(feature = "axum", feature = "sqlite"))]
mod shop_support;
mod sim;
#[cfg(all(feature = "redis", feature = "postgres"))]
mod startup_errors;
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
mod backstop_names;
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
mod state_conflicts;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_machine;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod state_support;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_guard;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_guard_locks;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_guard_sql;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_helpers;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_helpers_repeats;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_insert_once;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_macro;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_recipes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod tx_support;
