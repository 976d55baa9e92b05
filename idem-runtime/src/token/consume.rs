//! The token protocol over the execution layer:
//!
//! ```text
//! take (spends the token) ──Taken(fence)──> body
//!   │                                         ├─ Ok  -> Executed (nothing more to send)
//!   │                                         └─ Err -> give back (issued) -> Released
//!   └─Invalid──> TokenInvalid   (none, expired, or spent by another submission)
//! ```

use std::future::Future;
use std::time::Duration;

use crate::error::Error;
use crate::exec::{Acquired, Answer, ClaimSpec, Finish, Kind};
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
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
        if let Err(e) = self
            .idem
            .scenes()
            .register_key(key, self.idem.key_namespace())
        {
            return fail(CallOutcome::Failed, e);
        }
        let policy = crate::policy::LockPolicy {
            lease: self.lease,
            wait: None,
            max_hold: None,
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
        let owner = Owner::fresh();
        let spec = ClaimSpec {
            op: Op::TokenTake,
            kind: Kind::Token,
            key: k,
            owner,
            fingerprint: Fingerprint::NONE,
            lease: self.lease,
            // No answer is busy: this only bounds the take's queue turn in a burst.
            wait: policy.wait_budget(),
        };
        let read = |take| match take {
            TokenTake::Taken { fence } => Answer::Claimed(fence),
            TokenTake::Invalid => Answer::Stop(()),
        };
        let send = || tokens.take(k, owner);
        let mut claimed = match exec.acquire(spec, send, read).await {
            Acquired::Held(c) => c,
            Acquired::Stopped { .. } => return fail(CallOutcome::TokenInvalid, self.invalid()),
            Acquired::Busy { waited, .. } => {
                let e = Error::InProgress {
                    key: k.to_owned(),
                    waited,
                    lease_left: None,
                };
                return fail(CallOutcome::InProgress, e);
            }
            // `pending` gives back a take that got no answer, as this call ends.
            Acquired::Failed { error, .. } => {
                return fail(CallOutcome::Failed, self.idem.store_error(k, error));
            }
        };
        // The body starts: the token stays spent whatever becomes of this call
        // (a drop, a crash); only a body that returns an error gives it back.
        claimed.disarm();
        let held = claimed.held;
        let result = body(held.fence).await;
        let outcome = match result {
            Ok(_) => CallOutcome::Executed,
            Err(_) => {
                // The detached finish: the give-back goes on in the background
                // if this call is dropped or the store does not confirm it in time.
                if let Err(e) = exec.finish(&held, Finish::TokenGiveBack).await {
                    tracing::warn!(key = %crate::observe::key_hash(k), error = %e, "token not given back yet; it goes on in the background");
                }
                CallOutcome::Released
            }
        };
        (outcome, Some(held.fence), result)
    }
}
