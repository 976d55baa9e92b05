//! What operators read and change in the outbox table of a [`SqlStore`]'s
//! database: the outbox per topic (pending, parked, sent, the oldest pending
//! message's age, the lag), its parked messages, and unparking one. The
//! `idem` command's `outbox` calls these; the relay reads its lag gauge here.
//!
//! Every age is measured on the database clock, as every time idem writes.
//! The statements are built per call (operator calls, not the hot path);
//! their text per dialect is in `ops_text.rs`.

use std::time::{Duration, SystemTime};

use super::ops_text::{self as text, ParkedRow, TopicRow};
use crate::sql_kernel::retry_conflicts;
use crate::store::StoreError;
use crate::store::sql::SqlStore;
use crate::store::sql::bind::{Arg, bind};
use crate::store::sql::errors::map_err;
use crate::store::sql::ops_kit::{age_of as age, count, rows};
use crate::store::sql::pool::on_pool;
use crate::store::sql::stmt::Stmt;

/// One topic of an outbox table ([`SqlStore::outbox_topics`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboxTopic {
    /// The namespace its messages were enqueued under (`OutboxTable::namespace`;
    /// empty for the default).
    pub namespace: String,
    /// The topic.
    pub topic: String,
    /// Messages neither sent nor parked (claimed by a relay right now, waiting
    /// for one, or waiting for a retry after a refusal).
    pub pending: u64,
    /// Messages given up on after the relay's last attempt: they stay until
    /// an operator unparks ([`SqlStore::outbox_unpark`]) or deletes them.
    pub parked: u64,
    /// Sent messages still kept (until their retention ends and a purge
    /// deletes them).
    pub sent: u64,
    /// Age of the oldest pending message; `None` without one.
    pub oldest_pending: Option<Duration>,
    /// Age of the oldest pending message that is due now, which no relay has
    /// taken yet (not claimed, not waiting for a retry); `None` without one.
    /// What a relay that keeps up holds near zero, and what grows while no
    /// relay runs or the broker cannot be reached.
    pub lag: Option<Duration>,
}

/// A parked message ([`SqlStore::outbox_parked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParkedMessage {
    /// Its id (the broker's message id).
    pub id: String,
    /// Its topic.
    pub topic: String,
    /// Its business id.
    pub business_id: String,
    /// Failed publishes.
    pub attempts: u64,
    /// The broker's last refusal, as the relay recorded it.
    pub last_error: Option<String>,
    /// When it was enqueued (the database clock).
    pub created_at: SystemTime,
    /// How long ago that was.
    pub age: Duration,
}

/// Where an outbox message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutboxState {
    /// Not sent yet (state 0).
    Pending,
    /// Confirmed by the broker (state 1).
    Sent,
    /// Given up on (state 2).
    Parked,
}

impl OutboxState {
    fn from_column(v: i64) -> Result<Self, StoreError> {
        match v {
            0 => Ok(OutboxState::Pending),
            1 => Ok(OutboxState::Sent),
            2 => Ok(OutboxState::Parked),
            other => Err(StoreError::codec(format!(
                "outbox message in unknown state {other}"
            ))),
        }
    }

    /// `pending`, `sent` or `parked`.
    pub fn name(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Sent => "sent",
            OutboxState::Parked => "parked",
        }
    }
}

/// What [`SqlStore::outbox_unpark`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unpark {
    /// The message was parked and is pending again: attempts 0, due now, no
    /// owner. The next relay round publishes it.
    Unparked,
    /// No message has this id in the table (never enqueued, rolled back, or
    /// deleted).
    NotFound,
    /// The message is not parked: nothing changed.
    NotParked(OutboxState),
}

impl SqlStore {
    /// The outbox table per topic: pending, parked and sent messages, the
    /// oldest pending message's age and the lag (see [`OutboxTopic`]),
    /// sorted by namespace and topic. One `GROUP BY` over the table.
    pub async fn outbox_topics(&self) -> Result<Vec<OutboxTopic>, StoreError> {
        let stmt = Stmt::from(text::topics(self.dialect, &super::table(self)));
        let raw: Vec<TopicRow> = rows!(self, &stmt, &[], text::topic_row)?;
        let mut out: Vec<OutboxTopic> = raw
            .into_iter()
            .map(|r| OutboxTopic {
                namespace: r.0,
                topic: r.1,
                pending: count(r.2),
                parked: count(r.3),
                sent: count(r.4),
                oldest_pending: age(r.5),
                lag: age(r.6),
            })
            .collect();
        out.sort_by(|a, b| (&a.namespace, &a.topic).cmp(&(&b.namespace, &b.topic)));
        Ok(out)
    }

    /// Up to `limit` parked messages, oldest first.
    pub async fn outbox_parked(&self, limit: u32) -> Result<Vec<ParkedMessage>, StoreError> {
        let stmt = Stmt::from(text::parked(self.dialect, &super::table(self)));
        let args = [Arg::Int(i64::from(limit))];
        let raw: Vec<ParkedRow> = rows!(self, &stmt, &args, text::parked_row)?;
        Ok(raw
            .into_iter()
            .map(|r| ParkedMessage {
                id: r.0,
                topic: r.1,
                business_id: r.2,
                attempts: count(r.3),
                last_error: r.4,
                created_at: SystemTime::UNIX_EPOCH
                    + Duration::from_micros(u64::try_from(r.5).unwrap_or(0)),
                age: age(Some(r.6)).unwrap_or_default(),
            })
            .collect())
    }

    /// Unparks the message `id`: pending again with 0 attempts, due now, no
    /// owner (its last error is kept until the next publish fails). Only a
    /// parked message changes; [`Unpark`] says which case it was. Safe to
    /// repeat: a second call finds the message pending (or sent).
    ///
    /// An unparked message of an ordered business id goes out after every
    /// message of that id the relay published while it was parked.
    pub async fn outbox_unpark(&self, id: &str) -> Result<Unpark, StoreError> {
        let t = super::table(self);
        let update = Stmt::from(text::unpark(self.dialect, &t));
        let args = [Arg::Text(id)];
        let changed = retry_conflicts(|| async {
            on_pool!(self, |p| {
                Ok(bind(&self.sent, &update, &args)
                    .execute(p)
                    .await?
                    .rows_affected())
            })
        })
        .await
        .map_err(map_err)?;
        if changed > 0 {
            return Ok(Unpark::Unparked);
        }
        let state = Stmt::from(text::state_of(self.dialect, &t));
        let found: Vec<i64> = rows!(self, &state, &args, text::int_row)?;
        match found.first() {
            None => Ok(Unpark::NotFound),
            Some(&s) => Ok(Unpark::NotParked(OutboxState::from_column(s)?)),
        }
    }

    /// The whole table's lag: the age of the oldest pending message that is
    /// due now (the relay's `idem_outbox_lag_seconds`); `None` without one.
    #[cfg(any(feature = "rabbitmq", feature = "nats"))]
    pub(crate) async fn outbox_lag(&self) -> Result<Option<Duration>, StoreError> {
        let stmt = Stmt::from(text::lag(self.dialect, &super::table(self)));
        let found: Vec<Option<i64>> = rows!(self, &stmt, &[], text::opt_int_row)?;
        Ok(age(found.into_iter().next().flatten()))
    }
}
