//! The token protocol over the execution layer:
//!
//! ```text
//! take ──Taken(fence)──> body under the watchdog (renewing the token's lease)
//!   │                     ├─ Ok  -> consume (delete)   -> Executed
//!   │                     └─ Err -> give back (issued) -> Released
//!   ├─Busy──> wait (local wake-up or backoff), take again, or InProgress
//!   └─Invalid──> TokenInvalid
//! ```

use std::future::Future;
use std::time::Duration;

use crate::error::Error;
use crate::exec::{Held, Inflight, Waiter};
use crate::fence::Fence;
use crate::handle::Idem;
use crate::key::Key;
use crate::observe::{self, CallOutcome, Op, Technique, instrument::Fenced};
use crate::store::Owner;
use crate::store::token::TokenTake;

pub(super) struct Consumption<'a> {
    pub(super) idem: &'a Idem,
    pub(super) scope: &'a str,
    pub(super) key: Option<&'a Key>,
    pub(super) lease: Duration,
    pub(super) wait: Duration,
    pub(super) max_hold: Option<Duration>,
}

struct Consumed<T, E> {
    result: Result<T, E>,
    fence: Option<Fence>,
}

impl<T, E> Fenced for Consumed<T, E> {
    fn fence(&self) -> Option<Fence> {
        self.fence.filter(|_| self.result.is_ok())
    }
}

impl Consumption<'_> {
    pub(super) async fn execute<T, E, B, Fut>(&self, body: B) -> Result<T, E>
    where
        E: From<Error>,
        B: FnOnce(Fence) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // A text that is not a token has no key: the span names the scope.
        let fallback;
        let key = match self.key {
            Some(k) => k,
            None => {
                fallback = self.idem.key(self.scope, &[&"invalid"]);
                &fallback
            }
        };
        let recorder = &self.idem.inner.recorder;
        observe::instrument(recorder, Technique::Token, key, || async {
            let (outcome, fence, result) = self.protocol(body).await;
            (outcome, Consumed { result, fence })
        })
        .await
        .result
    }

    fn invalid(&self) -> Error {
        Error::TokenInvalid {
            key: match self.key {
                Some(k) => k.as_str().to_owned(),
                None => format!("{}:<malformed>", self.scope),
            },
        }
    }

    async fn protocol<T, E, B, Fut>(&self, body: B) -> (CallOutcome, Option<Fence>, Result<T, E>)
    where
        E: From<Error>,
        B: FnOnce(Fence) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let fail = |outcome, e: Error| (outcome, None, Err(e.into()));
        let Some(key) = self.key else {
            return fail(CallOutcome::TokenInvalid, self.invalid());
        };
        if let Err(e) = self.idem.scenes().register_key(key, self.idem.namespace()) {
            return fail(CallOutcome::Failed, e);
        }
        let policy = crate::lock::LockPolicy {
            lease: self.lease,
            wait: Some(self.wait),
            max_hold: self.max_hold,
        };
        if let Err(e) = policy.validate() {
            return fail(
                CallOutcome::Failed,
                Error::Config(e.replace("lock", "token")),
            );
        }
        let exec = &self.idem.inner.exec;
        let Some(tokens) = exec.store.tokens() else {
            let e = Error::Config(format!(
                "the `{}` store keeps no one-time tokens",
                exec.store.name()
            ));
            return fail(CallOutcome::Failed, e);
        };
        let k = key.as_str();
        let (lease, owner) = (self.lease, Owner::random());
        let budget = exec
            .op_timeout
            .min(lease / crate::policy::LEASE_PER_OP)
            .max(Duration::from_millis(1));
        let mut waiter = Waiter::new(self.wait);
        let held = loop {
            let mut sent = waiter.attempt();
            let queue = waiter.queue(budget);
            match exec
                .op_queued(Op::TokenTake, k, budget, queue, &mut sent, || {
                    tokens.take(k, owner, lease)
                })
                .await
            {
                Ok(TokenTake::Taken { fence }) => {
                    break Held {
                        key: k,
                        owner,
                        fence,
                        lease,
                        sent,
                        budget,
                    };
                }
                Ok(TokenTake::Invalid) => return fail(CallOutcome::TokenInvalid, self.invalid()),
                Ok(TokenTake::Busy { remaining }) => {
                    if !waiter.wait(exec, k, remaining).await {
                        let e = Error::InProgress {
                            key: k.to_owned(),
                            waited: waiter.elapsed(),
                        };
                        return fail(CallOutcome::InProgress, e);
                    }
                }
                Err(e) => return fail(CallOutcome::Failed, self.idem.store_error(k, e)),
            }
        };
        // Local submitters of the same token wait on this instead of polling.
        let _local = Inflight::register(exec, k);
        let renew = || tokens.renew(k, owner, lease);
        let max_hold = policy.max_hold();
        let result = exec
            .hold_with(
                &held,
                max_hold,
                None,
                Some((Op::TokenRenew, &renew)),
                body(held.fence),
            )
            .await;
        let (op, outcome) = match result {
            Ok(_) => (Op::TokenConsume, CallOutcome::Executed),
            Err(_) => (Op::TokenReturn, CallOutcome::Released),
        };
        let ok = result.is_ok();
        // Retried for two thirds of a lease (the part the last renewal surely
        // left): a consume lost for good would let the token come back.
        let finish_budget = (lease * 2 / 3).max(budget);
        let finished = exec
            .op_in(op, k, finish_budget, || {
                if ok {
                    tokens.consume(k, owner)
                } else {
                    tokens.give_back(k, owner)
                }
            })
            .await;
        if let Err(e) = finished {
            // Consume lost: the token returns to issued when the lease lapses.
            // Give-back lost: the same, a lease later than it could have.
            tracing::warn!(key = %crate::observe::key_hash(k), error = %e, op = op.as_str(), "token not finished; its lease will lapse");
        }
        (outcome, Some(held.fence), result)
    }
}
