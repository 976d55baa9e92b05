//! Consume-once: the consume log and the AMQP and NATS consumers.

#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
pub mod amqp;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
pub mod amqp_loop;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
pub mod amqp_poison;
#[cfg(all(feature = "postgres", feature = "rabbitmq"))]
pub mod amqp_support;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
pub mod batch_broker;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "rabbitmq",
    feature = "nats"
))]
pub mod batch_crash;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    any(feature = "rabbitmq", feature = "nats")
))]
pub mod batch_log;
#[cfg(all(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    any(feature = "rabbitmq", feature = "nats")
))]
pub mod batch_support;
#[cfg(all(feature = "postgres", any(feature = "rabbitmq", feature = "nats")))]
pub mod handler;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod log;
#[cfg(all(feature = "postgres", feature = "nats"))]
pub mod nats;
#[cfg(all(feature = "postgres", feature = "nats"))]
pub mod nats_support;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod savepoint_modes;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub mod support;
