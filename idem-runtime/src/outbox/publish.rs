//! What the relay asks of a broker ([`Publisher`]): publish a batch and say,
//! per message, whether the broker confirmed it, or that the broker could not
//! be reached at all. `amqp.rs` and `nats.rs` implement it; another broker is
//! one more implementation.

use crate::store::BoxFuture;

/// One message to publish.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The message id: set as the broker's message id (AMQP `message_id`,
    /// `Nats-Msg-Id`), so consumers and the broker's dedupe see one id for
    /// every publish of this message.
    pub id: &'a str,
    /// The topic given to `enqueue` (routing key, subject).
    pub topic: &'a str,
    /// The business id given to `enqueue` (sent as a header).
    pub business_id: &'a str,
    /// The payload.
    pub payload: &'a [u8],
}

/// A message the broker confirmed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confirmed {
    /// The broker recognised the message id as one it stored already (NATS
    /// JetStream inside its duplicate window); RabbitMQ never says so.
    pub duplicate: bool,
}

/// Per message of a batch, in order: confirmed, or refused by the broker with
/// a reason (counted against the message's attempts).
pub type PublishResult = Vec<Result<Confirmed, String>>;

/// The broker could not be reached, or the connection broke before every
/// confirmation came back: nothing of the batch counts as refused (the
/// messages are rescheduled without using up an attempt, and the relay
/// reconnects with backoff).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broker unavailable: {0}")]
pub struct BrokerDown(pub String);

/// A broker the relay publishes to.
pub trait Publisher: Send + Sync + 'static {
    /// A short name (`rabbitmq`, `nats`): the `broker` label of the metrics.
    fn broker(&self) -> &'static str;

    /// Publishes `batch` and waits for the broker's confirmation of each
    /// message. Connects (again) first when needed.
    fn publish<'a>(
        &'a self,
        batch: &'a [Outgoing<'a>],
    ) -> BoxFuture<'a, Result<PublishResult, BrokerDown>>;

    /// Closes the connection (after the last batch of a graceful shutdown).
    fn close(&self) -> BoxFuture<'_, ()>;
}
