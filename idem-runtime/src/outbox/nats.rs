//! The relay's NATS JetStream publisher (feature `nats`, `async-nats`): each
//! message published with `Nats-Msg-Id` set to the outbox message id (the
//! server drops a repeat inside the stream's duplicate window and says so:
//! counted as a duplicate), the business id in `Idem-Business-Id`, the
//! creation's W3C trace context in `traceparent` and `tracestate`, on the
//! subject `<prefix><topic>`; every publish acknowledged by the stream before
//! the relay marks it sent.
//!
//! ```text
//! let client = async_nats::connect("nats://127.0.0.1:4222").await?;
//! let publisher = idem::outbox::nats::NatsPublisher::new(client);
//! ```
//!
//! A refusal by the stream (a message over its size limit, a subject that no
//! stream captures, ...) refuses only that message: the others of its batch
//! are confirmed and marked as usual. A timeout, a broken connection, or "no
//! responders" while JetStream itself does not answer (restarting) leaves
//! the messages it concerns unconfirmed: they are given back without using
//! an attempt.

use async_nats::jetstream::{self, context::PublishErrorKind};

use super::publish::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher, Verdict};
use crate::observe::{TRACEPARENT, TRACESTATE};
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
            if let Some(cx) = m.trace {
                headers.insert(TRACEPARENT, cx.traceparent());
                if let Some(state) = cx.tracestate() {
                    headers.insert(TRACESTATE, state);
                }
            }
            let subject = format!("{}{}", self.prefix, m.topic);
            let sent = self
                .js
                .publish_with_headers(subject, headers, m.payload.to_vec().into())
                .await;
            acks.push(sent);
        }
        let mut out = Vec::with_capacity(batch.len());
        let mut stream_up = None;
        for (m, a) in batch.iter().zip(acks) {
            let answer = match a {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            out.push(match answer {
                Ok(ack) => Verdict::Confirmed(Confirmed {
                    duplicate: ack.duplicate,
                }),
                Err(e) => self.judge(e, m, &mut stream_up).await,
            });
        }
        if let Some(Verdict::Unconfirmed(why)) = out.first()
            && out.iter().all(|v| matches!(v, Verdict::Unconfirmed(_)))
        {
            return Err(BrokerDown(why.clone()));
        }
        Ok(out)
    }

    /// Whether JetStream answers an account-info request at all (any JSON
    /// reply will do: the reply's shape differs between server versions).
    async fn jetstream_answers(&self) -> bool {
        let r: Result<serde_json::Value, _> = self.js.request("INFO", "").await;
        r.is_ok()
    }

    /// A publish error's verdict. "No responders" means either that no stream
    /// captures the subject (the message's own fault: refused) or that
    /// JetStream itself is not answering (restarting: unconfirmed); one
    /// account-info request per batch tells which.
    async fn judge(
        &self,
        e: jetstream::context::PublishError,
        m: &Outgoing<'_>,
        jetstream_up: &mut Option<bool>,
    ) -> Verdict {
        match e.kind() {
            PublishErrorKind::StreamNotFound => {
                let up = match *jetstream_up {
                    Some(up) => up,
                    None => *jetstream_up.insert(self.jetstream_answers().await),
                };
                if up {
                    Verdict::Refused(format!(
                        "no JetStream stream captures subject `{}{}`",
                        self.prefix, m.topic
                    ))
                } else {
                    Verdict::Unconfirmed(format!("nats: {e}"))
                }
            }
            PublishErrorKind::TimedOut
            | PublishErrorKind::BrokenPipe
            | PublishErrorKind::MaxAckPending => Verdict::Unconfirmed(format!("nats: {e}")),
            _ => Verdict::Refused(format!("refused by the stream: {e}")),
        }
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
