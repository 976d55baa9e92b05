//! What the broker consumer loops report beside each call's outcome: how
//! deliveries ended, by consumer. A duplicate message is a call outcome
//! (`idem_calls_total{technique="consume",outcome="duplicate_message"}`); a
//! redelivery, a retry and a poison message are facts about the delivery,
//! counted here as `idem_consume_deliveries_total{consumer,event}`.

/// How a delivery is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeliveryEvent {
    /// The broker marked it delivered before (AMQP `redelivered`, NATS
    /// `delivered > 1`).
    Redelivered,
    /// The handler failed; the message goes back for another delivery.
    Retried,
    /// Failed on its last allowed delivery: dead-lettered or terminated, and
    /// handed to the poison hook.
    Poison,
}

impl DeliveryEvent {
    /// The `event` label.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryEvent::Redelivered => "redelivered",
            DeliveryEvent::Retried => "retried",
            DeliveryEvent::Poison => "poison",
        }
    }
}

/// Counts one delivery event of `consumer`.
pub fn count_delivery(consumer: &str, event: DeliveryEvent) {
    let key = metrics::Key::from_parts(
        "idem_consume_deliveries_total",
        vec![
            metrics::Label::new("consumer", consumer.to_owned()),
            metrics::Label::new("event", event.as_str()),
        ],
    );
    metrics::with_recorder(|r| r.register_counter(&key, &super::METADATA).increment(1));
}
