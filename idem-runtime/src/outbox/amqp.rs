//! The relay's RabbitMQ publisher (feature `rabbitmq`, `lapin`): one
//! connection and one channel in publisher-confirm mode, persistent messages
//! (`delivery_mode` 2) with `message_id` set to the outbox message id, the
//! topic as `type` and routing key, the business id in the
//! `idem-business-id` header, the creation's W3C trace context in the
//! `traceparent` and `tracestate` headers, `mandatory` so an unroutable message comes back
//! (a refusal, counted against its attempts) instead of vanishing.
//!
//! ```text
//! let publisher = idem::outbox::amqp::AmqpPublisher::new("amqp://127.0.0.1:5672/%2f");
//! let relay = idem::outbox::Relay::new(store, publisher, RelayOptions::new("orders"));
//! relay.run(signal).await;
//! ```
//!
//! A connection that cannot be opened fails the whole batch as
//! [`BrokerDown`]; a connection or channel that breaks mid-batch leaves the
//! messages without a confirmation unconfirmed (given back, no attempt used;
//! the next batch reconnects). A nack or a returned message refuses only
//! that message.

use lapin::Confirmation;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use super::publish::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher, Verdict};
use crate::observe::{TRACEPARENT, TRACESTATE};
use crate::store::BoxFuture;

/// The header holding the business id.
pub const BUSINESS_ID_HEADER: &str = "idem-business-id";

/// Publishes to RabbitMQ; see the module docs.
pub struct AmqpPublisher {
    url: String,
    exchange: String,
    conn: tokio::sync::Mutex<Option<(Connection, Channel)>>,
    /// Held while one batch is being sent.
    sending: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for AmqpPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpPublisher")
            .field("exchange", &self.exchange)
            .finish_non_exhaustive()
    }
}

impl AmqpPublisher {
    /// Publishes through the default exchange: the topic is the queue name.
    pub fn new(url: impl Into<String>) -> Self {
        AmqpPublisher {
            url: url.into(),
            exchange: String::new(),
            conn: tokio::sync::Mutex::new(None),
            sending: tokio::sync::Mutex::new(()),
        }
    }

    /// Publishes to `exchange`, the topic as routing key.
    pub fn exchange(mut self, exchange: impl Into<String>) -> Self {
        self.exchange = exchange.into();
        self
    }

    async fn connect(&self) -> Result<(Connection, Channel), lapin::Error> {
        let conn = Connection::connect(&self.url, ConnectionProperties::default()).await?;
        let ch = conn.create_channel().await?;
        ch.confirm_select(ConfirmSelectOptions::default()).await?;
        Ok((conn, ch))
    }

    /// A usable channel: the held one, or a fresh connection's.
    async fn channel(&self) -> Result<Channel, BrokerDown> {
        let mut held = self.conn.lock().await;
        let usable = held
            .as_ref()
            .is_some_and(|(c, ch)| c.status().connected() && ch.status().connected());
        if !usable {
            *held = None;
            *held = Some(self.connect().await.map_err(down)?);
        }
        match held.as_ref() {
            Some((_, ch)) => Ok(ch.clone()),
            None => Err(BrokerDown("no channel".into())),
        }
    }

    /// Forgets the connection after it failed: the next batch reconnects.
    async fn drop_connection(&self) {
        *self.conn.lock().await = None;
    }

    async fn publish_batch(&self, batch: &[Outgoing<'_>]) -> Result<PublishResult, BrokerDown> {
        // Sends happen under the lock, so one batch's messages go out in
        // order and a second batch queues behind them; its confirmations are
        // awaited without it, so the next batch's sends overlap them.
        let sends = {
            let _turn = self.sending.lock().await;
            let ch = self.channel().await?;
            let mut sends = Vec::with_capacity(batch.len());
            for m in batch {
                let sent = ch
                    .basic_publish(
                        self.exchange.as_str().into(),
                        m.topic.into(),
                        BasicPublishOptions {
                            mandatory: true,
                            ..Default::default()
                        },
                        m.payload,
                        properties(m),
                    )
                    .await;
                sends.push(sent);
            }
            sends
        };
        let mut out = Vec::with_capacity(batch.len());
        let mut broken = false;
        for sent in sends {
            let answer = match sent {
                Ok(c) => c.await,
                Err(e) => Err(e),
            };
            out.push(match answer {
                Ok(Confirmation::Ack(None)) => Verdict::Confirmed(Confirmed::default()),
                Ok(Confirmation::Ack(Some(r))) => Verdict::Refused(format!(
                    "returned by the broker: {} {}",
                    r.reply_code, r.reply_text
                )),
                Ok(Confirmation::Nack(_)) => Verdict::Refused("nacked by the broker".into()),
                Ok(Confirmation::NotRequested) => {
                    broken = true;
                    Verdict::Unconfirmed("the channel is not in confirm mode".into())
                }
                Err(e) => {
                    broken = true;
                    Verdict::Unconfirmed(down(e).0)
                }
            });
        }
        if broken {
            self.drop_connection().await;
        }
        Ok(out)
    }
}

/// A message's properties: persistent, the outbox id as `message_id`, the
/// topic as `type`, the business id in a header, and the creation's trace
/// context in the `traceparent` and `tracestate` headers.
fn properties(m: &Outgoing<'_>) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(
        BUSINESS_ID_HEADER.into(),
        AMQPValue::LongString(m.business_id.into()),
    );
    if let Some(cx) = m.trace {
        headers.insert(
            TRACEPARENT.into(),
            AMQPValue::LongString(cx.traceparent().into()),
        );
        if let Some(state) = cx.tracestate() {
            headers.insert(TRACESTATE.into(), AMQPValue::LongString(state.into()));
        }
    }
    BasicProperties::default()
        .with_message_id(m.id.into())
        .with_delivery_mode(2)
        .with_type(m.topic.into())
        .with_headers(headers)
}

fn down(e: lapin::Error) -> BrokerDown {
    BrokerDown(format!("rabbitmq: {e}"))
}

impl Publisher for AmqpPublisher {
    fn broker(&self) -> &'static str {
        "rabbitmq"
    }

    fn publish<'a>(
        &'a self,
        batch: &'a [Outgoing<'a>],
    ) -> BoxFuture<'a, Result<PublishResult, BrokerDown>> {
        Box::pin(self.publish_batch(batch))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some((conn, ch)) = self.conn.lock().await.take() {
                let _ = ch.close(200, "idem relay stopped".into()).await;
                let _ = conn.close(200, "idem relay stopped".into()).await;
            }
        })
    }
}
