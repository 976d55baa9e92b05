//! The transactional outbox: the producing side of "effects exactly once".
//!
//! Publishing from a service that also writes its database has two crash
//! windows. A crash between the business commit and the publish loses the
//! message; a crash between the publish and a "sent" mark publishes it again,
//! and if the retry makes up a new message id, no consumer can recognise it.
//! The outbox closes both:
//!
//! 1. [`Outbox::enqueue`] writes the message into the outbox table *in the
//!    caller's business transaction*: it commits or rolls back with the
//!    business rows. It is unique on (namespace, topic, business id), and its
//!    message id is derived from them ([`MessageId`]), so a retried business
//!    transaction enqueues nothing new and gets the same id back.
//! 2. A relay (`Relay`, features `rabbitmq`/`nats`) claims due messages
//!    (`FOR UPDATE SKIP LOCKED`; SQLite `BEGIN IMMEDIATE`), publishes them with
//!    the broker's confirmation (RabbitMQ publisher confirms, persistent,
//!    `message_id` set; NATS JetStream acks with `Nats-Msg-Id`), then marks
//!    them sent, a few batches in flight at once. A crash between the confirm and the mark republishes the
//!    *same* message id after the claim's lease: JetStream drops it inside its
//!    duplicate window, and `#[consume_once]` keyed on the message id finds it
//!    in its log either way.
//!
//! ```text
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO orders ...").execute(&mut *tx).await?;
//! let id = idem::outbox::Outbox::enqueue(&mut tx, "order.created", &order_no, &payload).await?;
//! tx.commit().await?;   // the message exists exactly when the order does
//! ```
//!
//! Each row keeps the W3C trace context of its creation
//! ([`TraceContext::current`](crate::observe::TraceContext::current)), and
//! the relay sends it as `traceparent`/`tracestate` headers on every publish,
//! so a consumer's span links to the request that enqueued the message
//! (feature `otel`; without it the context still travels).
//!
//! The table is `idem_outbox` by default, created by `migrate()`, exported by
//! `idem::sql::ddl()`, purged (sent messages past their retention) by
//! `purge_expired`; another name through [`OutboxTable`] and
//! `TableNames::outbox`. Parked messages (given up after the relay's last
//! attempt) stay until an operator deals with them.

mod enqueue;
mod id;

pub use enqueue::{Outbox, OutboxTable};
pub use id::MessageId;

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub(crate) mod sql;

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use sql::text::{DEFAULT_OUTBOX_TABLE, check_outbox_table};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use sql::{OutboxState, OutboxTopic, ParkedMessage, Unpark};

#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod gauges;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod pipeline;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod publish;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod relay;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod round;
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
mod wake;

#[cfg(feature = "rabbitmq")]
pub mod amqp;
#[cfg(feature = "nats")]
pub mod nats;

#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub use publish::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher, Verdict};
#[cfg(any(feature = "rabbitmq", feature = "nats"))]
pub use relay::{
    AfterConfirmHook, MIN_RETENTION, ParkHook, Parked, Relay, RelayCounters, RelayOptions,
};
