//! [`MessageId`]: the outbox's message ids, derived from what the message is
//! about, so every enqueue of one (topic, business id) names one message.

/// An outbox message's id: `obx-` and 32 hex digits of the blake3 hash of the
/// outbox's namespace, the topic and the business id. The relay publishes it
/// as the broker's message id (AMQP `message_id`, `Nats-Msg-Id`), which is what
/// `#[consume_once(msg_id = ...)]` keys on.
///
/// ```
/// use idem::outbox::MessageId;
/// let a = MessageId::derive("", "order.created", "o-1");
/// assert_eq!(a, MessageId::derive("", "order.created", "o-1"));
/// assert_ne!(a, MessageId::derive("", "order.paid", "o-1"));
/// assert_ne!(a, MessageId::derive("billing", "order.created", "o-1"));
/// assert!(a.as_str().starts_with("obx-") && a.as_str().len() == 36);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// The id of (namespace, topic, business id). Each part is length-prefixed
    /// in the hash, so no two distinct triples collide by concatenation.
    pub fn derive(namespace: &str, topic: &str, business_id: &str) -> MessageId {
        let mut h = blake3::Hasher::new();
        for part in [namespace, topic, business_id] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let hex = h.finalize().to_hex();
        MessageId(format!("obx-{}", &hex.as_str()[..32]))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An id read back from the table or a broker header.
    #[cfg_attr(not(any(feature = "rabbitmq", feature = "nats")), allow(dead_code))]
    pub(crate) fn from_stored(s: String) -> MessageId {
        MessageId(s)
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for MessageId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
