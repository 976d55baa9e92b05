//! One batch's life: claimed, published, and each message's verdict recorded
//! (confirmed: marked sent; refused: retried or parked alone; unconfirmed:
//! given back without using an attempt).

use std::time::Duration;

use super::MessageId;
use super::publish::{BrokerDown, Outgoing, Verdict};
use super::relay::{Parked, Relay, add};
use super::sql::claim::OutboxRow;
use crate::db::micros;
use crate::observe::messaging::MsgSpan;
use crate::observe::{Op, TraceContext};
use crate::store::StoreError;

/// Why a claim did not happen.
#[derive(Debug, thiserror::Error)]
pub(super) enum RoundError {
    #[error("outbox database: {0}")]
    Db(#[from] StoreError),
    #[error(transparent)]
    Broker(#[from] BrokerDown),
}

/// Pause before messages given back after a broker failure are due again.
const GIVE_BACK_DELAY: Duration = Duration::from_millis(200);

/// Messages one claim took, held under that claim's owner.
#[derive(Debug)]
pub(super) struct Batch {
    owner: [u8; 16],
    rows: Vec<OutboxRow>,
}

/// How a batch ended: whether the broker answered for every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BatchEnd {
    Answered,
    BrokerDown,
}

impl Relay {
    /// Claims the next batch; `None` when nothing is due.
    ///
    /// Each claim has an owner of its own, so that a claim the execution
    /// layer repeats after a lost reply first gives back what the lost
    /// attempt took (those rows would otherwise wait a whole lease) without
    /// touching this relay's other batches in flight.
    pub(super) async fn claim(&self) -> Result<Option<Batch>, RoundError> {
        if !self.broker.allow() {
            return Err(BrokerDown("circuit breaker open".into()).into());
        }
        let key = self.store.tables().outbox_name();
        let owner = self.claim_owner();
        let (lease, limit) = (
            micros(self.opts.lease),
            i64::try_from(self.opts.batch.max(1)).unwrap_or(i64::MAX),
        );
        let mut attempts = 0u32;
        let rows = self
            .exec
            .op(Op::OutboxClaim, key, || {
                attempts += 1;
                let again = attempts > 1;
                Box::pin(self.store.outbox_claim(&owner, lease, limit, again))
            })
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let c = &self.opts.counters;
        add(&c.rounds, 1);
        add(&c.claimed, rows.len() as u64);
        Ok(Some(Batch { owner, rows }))
    }

    /// Publishes `batch` and records each message's verdict.
    pub(super) async fn deliver(&self, batch: Batch) -> BatchEnd {
        let rows = &batch.rows;
        // The creation contexts; a malformed stored one reads as none.
        let traces: Vec<Option<TraceContext>> = rows
            .iter()
            .map(|r| {
                let tp = r.traceparent.as_deref()?;
                TraceContext::parse(tp, r.tracestate.as_deref())
            })
            .collect();
        let out: Vec<Outgoing<'_>> = rows
            .iter()
            .zip(&traces)
            .map(|(r, trace)| Outgoing {
                id: &r.id,
                topic: &r.topic,
                business_id: &r.business_id,
                payload: &r.payload,
                trace: trace.as_ref(),
            })
            .collect();
        // One `send` span per message, a child of its creation context
        // (nothing without the `otel` feature).
        let broker = self.publisher.broker();
        let spans: Vec<MsgSpan> = rows
            .iter()
            .zip(&traces)
            .map(|(r, trace)| MsgSpan::send(broker, &r.topic, &r.id, trace.as_ref()))
            .collect();
        let sent = tokio::time::timeout(self.opts.publish_timeout, self.publisher.publish(&out));
        let verdicts = match sent.await {
            Ok(Ok(v)) if v.len() == rows.len() => v,
            Ok(Ok(v)) => all_unconfirmed(
                rows.len(),
                format!("{} verdicts for {} messages", v.len(), rows.len()),
            ),
            Ok(Err(e)) => all_unconfirmed(rows.len(), e.0),
            Err(_) => all_unconfirmed(
                rows.len(),
                format!("no confirmation within {:?}", self.opts.publish_timeout),
            ),
        };
        let (mut confirmed, mut unconfirmed, mut refused) = (Vec::new(), Vec::new(), Vec::new());
        let mut duplicates = 0;
        let mut down = None;
        for ((row, v), span) in rows.iter().zip(verdicts).zip(&spans) {
            span.verdict(match &v {
                Verdict::Confirmed(ok) if ok.duplicate => "duplicate",
                Verdict::Confirmed(_) => "confirmed",
                Verdict::Refused(_) => "refused",
                Verdict::Unconfirmed(_) => "unconfirmed",
            });
            match v {
                Verdict::Confirmed(ok) => {
                    duplicates += u64::from(ok.duplicate);
                    confirmed.push(row);
                }
                Verdict::Refused(why) => refused.push((row, why)),
                Verdict::Unconfirmed(why) => {
                    unconfirmed.push(row.seq);
                    down.get_or_insert(why);
                }
            }
        }
        let c = &self.opts.counters;
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
        for (row, why) in &refused {
            self.refused(&batch.owner, row, why).await;
        }
        match down {
            None => {
                self.broker.success();
                BatchEnd::Answered
            }
            Some(why) => {
                self.give_back(&batch.owner, &unconfirmed, &why).await;
                BatchEnd::BrokerDown
            }
        }
    }

    /// Marks the confirmed messages sent, in one statement. A failure leaves
    /// them claimed: they are published again when the lease lapses (the same
    /// ids: consumers dedupe), so it is logged, not returned.
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
    /// hook told) after the last allowed attempt. Only this message pays.
    async fn refused(&self, owner: &[u8; 16], row: &OutboxRow, error: &str) {
        let key = row.id.as_str();
        let attempts = row.attempts + 1;
        let c = &self.opts.counters;
        add(&c.refused, 1);
        if attempts >= i64::from(self.opts.max_attempts.max(1)) {
            let r = self
                .exec
                .op(Op::OutboxRetry, key, || {
                    Box::pin(self.store.outbox_park(row.seq, owner, attempts, error))
                })
                .await;
            match r {
                Ok(true) => self.parked(row, attempts, error),
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

    fn parked(&self, row: &OutboxRow, attempts: i64, error: &str) {
        add(&self.opts.counters.parked, 1);
        self.gauges.parked(1);
        tracing::error!(relay = %self.opts.name, id = %row.id, topic = %row.topic, attempts, error,
            "idem: outbox message parked");
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

    /// `retry_min` doubled per failed attempt up to `retry_max`, jittered.
    fn backoff(&self, attempts: i64) -> Duration {
        let shift = u32::try_from(attempts.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(20);
        let d = self.opts.retry_min.saturating_mul(1 << shift);
        self.exec.jitter.apply(d.min(self.opts.retry_max))
    }

    /// The broker gave no answer about `seqs`: give them back, due shortly,
    /// without using up an attempt (the lease would otherwise hold them for
    /// its whole length), and count a broker failure.
    async fn give_back(&self, owner: &[u8; 16], seqs: &[i64], why: &str) {
        self.broker.failure();
        add(&self.opts.counters.broker_down, 1);
        tracing::warn!(relay = %self.opts.name, n = seqs.len(), error = why,
            "idem: the broker did not confirm outbox messages; they are given back");
        let key = self.store.tables().outbox_name();
        let delay = micros(self.exec.jitter.apply(GIVE_BACK_DELAY));
        let r = self
            .exec
            .op(Op::OutboxRetry, key, || {
                Box::pin(self.store.outbox_release(seqs, owner, delay))
            })
            .await;
        if let Err(db) = r {
            tracing::warn!(error = %db, "idem: giving outbox messages back failed; they are due again after the lease");
        }
    }
}

fn all_unconfirmed(n: usize, why: String) -> Vec<Verdict> {
    vec![Verdict::Unconfirmed(why); n]
}
