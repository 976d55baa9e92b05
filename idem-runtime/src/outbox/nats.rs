//! The relay's NATS JetStream publisher (feature `nats`, `async-nats`): each
//! message published with `Nats-Msg-Id` set to the outbox message id (the
//! server drops a repeat inside the stream's duplicate window and says so:
//! counted as a duplicate), the business id in `Idem-Business-Id`, on the
//! subject `<prefix><topic>`; every publish acknowledged by the stream before
//! the relay marks it sent.
//!
//! ```text
//! let client = async_nats::connect("nats://127.0.0.1:4222").await?;
//! let publisher = idem::outbox::nats::NatsPublisher::new(client);
//! ```
//!
//! Timeouts, a broken connection and "no responders" (JetStream not there,
//! e.g. restarting) fail the whole batch as [`BrokerDown`]; a refusal by the
//! stream (a message over its size limit, ...) refuses only that message.

use async_nats::jetstream::{self, context::PublishErrorKind};

use super::publish::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher};
use crate::store::BoxFuture;

/// The header holding the business id.
pub const BUSINESS_ID_HEADER: &str = "Idem-Business-Id";

/// Publishes to JetStream; see the module docs.
#[derive(Debug, Clone)]
pub struct NatsPublisher {
    js: jetstream::Context,
    prefix: String,
}

impl NatsPublisher {
    /// Publishes through `client`, the topic as the subject. The client
    /// reconnects by itself.
    pub fn new(client: async_nats::Client) -> Self {
        NatsPublisher {
            js: jetstream::new(client),
            prefix: String::new(),
        }
    }

    /// Publishes on `<prefix><topic>`.
    pub fn subject_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    async fn publish_batch(&self, batch: &[Outgoing<'_>]) -> Result<PublishResult, BrokerDown> {
        let mut acks = Vec::with_capacity(batch.len());
        for m in batch {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(crate::consume::nats::MSG_ID_HEADER, m.id);
            headers.insert(BUSINESS_ID_HEADER, m.business_id);
            let subject = format!("{}{}", self.prefix, m.topic);
            let sent = self
                .js
                .publish_with_headers(subject, headers, m.payload.to_vec().into())
                .await;
            acks.push(match sent {
                Ok(ack) => Ok(ack),
                Err(e) => Err(judge(e)?),
            });
        }
        let mut out = Vec::with_capacity(batch.len());
        for a in acks {
            out.push(match a {
                Ok(ack) => match ack.await {
                    Ok(ack) => Ok(Confirmed {
                        duplicate: ack.duplicate,
                    }),
                    Err(e) => Err(judge(e)?),
                },
                Err(refused) => Err(refused),
            });
        }
        Ok(out)
    }
}

/// A publish error: the message's own refusal, or the broker down.
fn judge(e: jetstream::context::PublishError) -> Result<String, BrokerDown> {
    match e.kind() {
        PublishErrorKind::TimedOut
        | PublishErrorKind::BrokenPipe
        | PublishErrorKind::StreamNotFound
        | PublishErrorKind::MaxAckPending => Err(BrokerDown(format!("nats: {e}"))),
        _ => Ok(format!("refused by the stream: {e}")),
    }
}

impl Publisher for NatsPublisher {
    fn broker(&self) -> &'static str {
        "nats"
    }

    fn publish<'a>(
        &'a self,
        batch: &'a [Outgoing<'a>],
    ) -> BoxFuture<'a, Result<PublishResult, BrokerDown>> {
        Box::pin(self.publish_batch(batch))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        // Every publish was acknowledged before its round ended; the client
        // is the caller's (it may share it), so it stays open.
        Box::pin(async {})
    }
}
