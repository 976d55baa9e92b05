//! The relay's RabbitMQ publisher (feature `rabbitmq`, `lapin`): one
//! connection and one channel in publisher-confirm mode, persistent messages
//! (`delivery_mode` 2) with `message_id` set to the outbox message id, the
//! topic as `type` and routing key, the business id in the
//! `idem-business-id` header, `mandatory` so an unroutable message comes back
//! (a refusal, counted against its attempts) instead of vanishing.
//!
//! ```text
//! let publisher = idem::outbox::amqp::AmqpPublisher::new("amqp://127.0.0.1:5672/%2f");
//! let relay = idem::outbox::Relay::new(store, publisher, RelayOptions::new("orders"));
//! relay.run(signal).await;
//! ```
//!
//! A broken connection or channel fails the whole batch as [`BrokerDown`]
//! (the relay gives it back and reconnects on its next round); a nack or a
//! returned message refuses only that message.

use lapin::Confirmation;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use super::publish::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher};
use crate::store::BoxFuture;

/// The header holding the business id.
pub const BUSINESS_ID_HEADER: &str = "idem-business-id";

/// Publishes to RabbitMQ; see the module docs.
pub struct AmqpPublisher {
    url: String,
    exchange: String,
    conn: tokio::sync::Mutex<Option<(Connection, Channel)>>,
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

    async fn publish_batch(&self, batch: &[Outgoing<'_>]) -> Result<PublishResult, BrokerDown> {
        let mut held = self.conn.lock().await;
        let usable = held
            .as_ref()
            .is_some_and(|(c, ch)| c.status().connected() && ch.status().connected());
        if !usable {
            *held = None;
            let fresh = self.connect().await.map_err(down)?;
            *held = Some(fresh);
        }
        let Some((_, ch)) = held.as_ref() else {
            return Err(BrokerDown("no channel".into()));
        };
        let mut confirms = Vec::with_capacity(batch.len());
        for m in batch {
            let mut headers = FieldTable::default();
            headers.insert(
                BUSINESS_ID_HEADER.into(),
                AMQPValue::LongString(m.business_id.into()),
            );
            let props = BasicProperties::default()
                .with_message_id(m.id.into())
                .with_delivery_mode(2)
                .with_type(m.topic.into())
                .with_headers(headers);
            let opts = BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            };
            let sent = ch
                .basic_publish(
                    self.exchange.as_str().into(),
                    m.topic.into(),
                    opts,
                    m.payload,
                    props,
                )
                .await;
            match sent {
                Ok(c) => confirms.push(c),
                Err(e) => {
                    *held = None;
                    return Err(down(e));
                }
            }
        }
        let mut out = Vec::with_capacity(batch.len());
        for c in confirms {
            out.push(match c.await {
                Ok(Confirmation::Ack(None)) => Ok(Confirmed::default()),
                Ok(Confirmation::Ack(Some(r))) => Err(format!(
                    "returned by the broker: {} {}",
                    r.reply_code, r.reply_text
                )),
                Ok(Confirmation::Nack(_)) => Err("nacked by the broker".into()),
                Ok(Confirmation::NotRequested) => {
                    *held = None;
                    return Err(BrokerDown("the channel is not in confirm mode".into()));
                }
                Err(e) => {
                    *held = None;
                    return Err(down(e));
                }
            });
        }
        Ok(out)
    }
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
