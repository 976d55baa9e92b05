//! One relay round: claim due messages, publish them and await the broker's
//! confirmations, mark the confirmed ones sent, reschedule or park the
//! refused ones. A broker that cannot be reached gets the batch back
//! unpublished (no attempt used up) and the broker breaker a failure.

use std::time::Duration;

use super::MessageId;
use super::publish::{BrokerDown, Outgoing};
use super::relay::{Parked, Relay, add};
use crate::db::micros;
use crate::observe::Op;
use crate::store::StoreError;
use crate::store::sql::outbox_store::OutboxRow;

/// Why a round ended early.
#[derive(Debug, thiserror::Error)]
pub(super) enum RoundError {
    #[error("outbox database: {0}")]
    Db(#[from] StoreError),
    #[error(transparent)]
    Broker(#[from] BrokerDown),
}

/// Pause before a batch given back after a broker failure is due again.
const GIVE_BACK_DELAY: Duration = Duration::from_millis(200);

impl Relay {
    /// One round; the number of messages claimed.
    pub(super) async fn round(&self) -> Result<usize, RoundError> {
        if !self.broker.allow() {
            return Err(BrokerDown("circuit breaker open".into()).into());
        }
        let key = self.store.tables().outbox_name();
        let (owner, lease) = (&self.owner, micros(self.opts.lease));
        let limit = i64::try_from(self.opts.batch.max(1)).unwrap_or(i64::MAX);
        let rows = self
            .exec
            .op(Op::OutboxClaim, key, || {
                Box::pin(self.store.outbox_claim(owner, lease, limit))
            })
            .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let c = &self.opts.counters;
        add(&c.rounds, 1);
        add(&c.claimed, rows.len() as u64);
        let out: Vec<Outgoing<'_>> = rows
            .iter()
            .map(|r| Outgoing {
                id: &r.id,
                topic: &r.topic,
                business_id: &r.business_id,
                payload: &r.payload,
            })
            .collect();
        let sent = tokio::time::timeout(self.opts.publish_timeout, self.publisher.publish(&out));
        let results = match sent.await {
            Ok(Ok(res)) if res.len() == rows.len() => res,
            Ok(Ok(res)) => {
                let e = BrokerDown(format!(
                    "{} confirmations for {} messages",
                    res.len(),
                    rows.len()
                ));
                return Err(self.give_back(&rows, e).await);
            }
            Ok(Err(e)) => return Err(self.give_back(&rows, e).await),
            Err(_) => {
                let e = BrokerDown(format!(
                    "no confirmation within {:?}",
                    self.opts.publish_timeout
                ));
                return Err(self.give_back(&rows, e).await);
            }
        };
        self.broker.success();
        let mut confirmed = Vec::new();
        let mut duplicates = 0;
        let mut refused = Vec::new();
        for (row, r) in rows.iter().zip(results) {
            match r {
                Ok(ok) => {
                    duplicates += u64::from(ok.duplicate);
                    confirmed.push(row);
                }
                Err(e) => refused.push((row, e)),
            }
        }
        add(&c.published, confirmed.len() as u64);
        add(&c.duplicates, duplicates);
        self.gauges.published(confirmed.len() as u64, duplicates);
        if let Some(hook) = &self.opts.after_confirm {
            let ids: Vec<MessageId> = confirmed
                .iter()
                .map(|r| MessageId::from_stored(r.id.clone()))
                .collect();
            hook(&ids);
        }
        self.mark_sent(&confirmed).await;
        for (row, e) in refused {
            self.refused(row, &e).await;
        }
        Ok(rows.len())
    }

    /// Marks the confirmed messages sent. A failure leaves them claimed: they
    /// are published again when the lease lapses (the same ids: consumers
    /// dedupe), so it is logged, not returned.
    async fn mark_sent(&self, confirmed: &[&OutboxRow]) {
        if confirmed.is_empty() {
            return;
        }
        let key = self.store.tables().outbox_name();
        let seqs: Vec<i64> = confirmed.iter().map(|r| r.seq).collect();
        let keep = micros(self.opts.retention);
        let r = self
            .exec
            .op(Op::OutboxSent, key, || {
                Box::pin(self.store.outbox_sent(&seqs, keep))
            })
            .await;
        match r {
            Ok(_) => add(&self.opts.counters.marked, seqs.len() as u64),
            Err(e) => tracing::warn!(relay = %self.opts.name, error = %e, n = seqs.len(),
                "idem: marking confirmed outbox messages sent failed; they are republished after the lease"),
        }
    }

    /// The broker refused `row`: due again after a backoff, or parked (and the
    /// hook told) after the last allowed attempt.
    async fn refused(&self, row: &OutboxRow, error: &str) {
        let (key, owner) = (row.id.as_str(), &self.owner);
        let attempts = row.attempts + 1;
        let c = &self.opts.counters;
        if attempts >= i64::from(self.opts.max_attempts.max(1)) {
            let r = self
                .exec
                .op(Op::OutboxRetry, key, || {
                    Box::pin(self.store.outbox_park(row.seq, owner, attempts, error))
                })
                .await;
            match r {
                Ok(true) => {
                    add(&c.parked, 1);
                    self.gauges.parked(1);
                    tracing::error!(relay = %self.opts.name, id = key, attempts, error, "idem: outbox message parked");
                    if let Some(hook) = &self.opts.on_park {
                        hook(&Parked {
                            id: MessageId::from_stored(row.id.clone()),
                            topic: row.topic.clone(),
                            business_id: row.business_id.clone(),
                            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                            error: error.to_owned(),
                        });
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "idem: parking an outbox message failed"),
            }
            return;
        }
        let delay = self.backoff(attempts);
        let r = self
            .exec
            .op(Op::OutboxRetry, key, || {
                Box::pin(
                    self.store
                        .outbox_retry(row.seq, owner, attempts, micros(delay), error),
                )
            })
            .await;
        match r {
            Ok(_) => {
                add(&c.retried, 1);
                self.gauges.retried(1);
            }
            Err(e) => tracing::warn!(error = %e, "idem: rescheduling an outbox message failed"),
        }
    }

    /// `retry_min` doubled per failed attempt up to `retry_max`, jittered.
    fn backoff(&self, attempts: i64) -> Duration {
        let shift = u32::try_from(attempts.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(20);
        let d = self.opts.retry_min.saturating_mul(1 << shift);
        self.exec.jitter.apply(d.min(self.opts.retry_max))
    }

    /// The broker failed the whole batch: give it back, due shortly, without
    /// using up an attempt (the lease would otherwise hold it for its whole
    /// length), and count a broker failure.
    async fn give_back(&self, rows: &[OutboxRow], e: BrokerDown) -> RoundError {
        self.broker.failure();
        add(&self.opts.counters.broker_down, 1);
        let key = self.store.tables().outbox_name();
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        let delay = micros(self.exec.jitter.apply(GIVE_BACK_DELAY));
        let r = self
            .exec
            .op(Op::OutboxRetry, key, || {
                Box::pin(self.store.outbox_release(&seqs, &self.owner, delay))
            })
            .await;
        if let Err(db) = r {
            tracing::warn!(error = %db, "idem: giving an outbox batch back failed; it is due again after the lease");
        }
        RoundError::Broker(e)
    }
}
