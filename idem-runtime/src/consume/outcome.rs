//! [`Consumed`]: what a consumer returns when it did not fail.

/// The result of consuming one message through the consume log.
///
/// A broker delivers at least once; a duplicate is a success, not an error:
/// acknowledge it and move on.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consumed<T> {
    /// The log row was written and the body ran in the same transaction; its
    /// value. Commit, then acknowledge.
    Processed(T),
    /// The log already holds this message, or this business id under another
    /// message id: nothing was written. Acknowledge and skip.
    Duplicate {
        /// Which unique key found it.
        by: DuplicateOf,
    },
}

/// Which unique key of the consume log recognised a duplicate. A plain
/// redelivery matches both; which of the two the database reports is its
/// choice (SQLite names the business-id index, PostgreSQL the primary key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DuplicateOf {
    /// The same message id, delivered again (redelivery, a publisher retry).
    MessageId,
    /// The same (consumer, message type, business id) under a new message id:
    /// the publisher sent the same fact twice.
    BusinessId,
}

impl<T> Consumed<T> {
    /// True when this call processed the message.
    pub fn is_processed(&self) -> bool {
        matches!(self, Consumed::Processed(_))
    }

    /// True for a duplicate.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Consumed::Duplicate { .. })
    }

    /// The body's value, when this call processed the message.
    pub fn processed(self) -> Option<T> {
        match self {
            Consumed::Processed(v) => Some(v),
            Consumed::Duplicate { .. } => None,
        }
    }

    /// Maps the processed value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Consumed<U> {
        match self {
            Consumed::Processed(v) => Consumed::Processed(f(v)),
            Consumed::Duplicate { by } => Consumed::Duplicate { by },
        }
    }
}
