//! What the relay asks of a broker ([`Publisher`]): publish a batch and say,
//! per message, whether the broker confirmed it, or that the broker could not
//! be reached at all. `amqp.rs` and `nats.rs` implement it; another broker is
//! one more implementation.

use crate::observe::TraceContext;
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
    /// The W3C trace context of the message's creation, sent as the
    /// `traceparent` and `tracestate` headers (the same on every publish of
    /// the message).
    pub trace: Option<&'a TraceContext>,
}

/// A message the broker confirmed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confirmed {
    /// The broker recognised the message id as one it stored already (NATS
    /// JetStream inside its duplicate window); RabbitMQ never says so.
    pub duplicate: bool,
}

/// The broker's answer about one message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Stored by the broker: the relay marks it sent.
    Confirmed(Confirmed),
    /// The broker answered and would not take this message (a nack, a
    /// returned message, no stream for its subject, over a size limit): an
    /// attempt is counted for this message alone, and it is parked after the
    /// relay's `max_attempts`. The reason is kept as the message's last error.
    Refused(String),
    /// No answer about this message (the connection broke, the confirmation
    /// did not come in time): it is given back without using an attempt, and
    /// the broker's circuit breaker counts a failure.
    Unconfirmed(String),
}

/// Per message of a batch, in order: the broker's [`Verdict`].
pub type PublishResult = Vec<Verdict>;

/// The broker could not be reached at all (no connection): nothing of the
/// batch was sent; it is given back without using up an attempt, and the
/// relay reconnects with backoff.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broker unavailable: {0}")]
pub struct BrokerDown(pub String);

/// A broker the relay publishes to.
pub trait Publisher: Send + Sync + 'static {
    /// A short name (`rabbitmq`, `nats`): the `broker` label of the metrics.
    fn broker(&self) -> &'static str;

    /// Publishes `batch` and waits for the broker's verdict on each message.
    /// Connects (again) first when needed. The relay may call it again before
    /// an earlier call's confirmations are in (it keeps a few batches in
    /// flight); messages of one call are sent in order.
    fn publish<'a>(
        &'a self,
        batch: &'a [Outgoing<'a>],
    ) -> BoxFuture<'a, Result<PublishResult, BrokerDown>>;

    /// Closes the connection (after the last batch of a graceful shutdown).
    fn close(&self) -> BoxFuture<'_, ()>;
}
