//! After the body: store the result (or a terminal error), turn a backstop
//! violation into the existing result, or release the claim.

use std::future::Future;

use serde::{Serialize, de::DeserializeOwned};

use super::engine::{Call, Step};
use super::replay::{encode_err, encode_ok};
use crate::error::Error;
use crate::exec::{Finish, Held};
use crate::fence::Fence;
use crate::hooks::{DetectFn, Hooks, OnConflict};
use crate::observe::CallOutcome;
use crate::outcome::{How, Outcome};
use crate::store::Owned;

impl Call<'_> {
    pub(super) async fn after_body<T, E, C>(
        &self,
        held: &Held<'_>,
        result: Result<T, E>,
        hooks: Hooks<E, C>,
    ) -> Step<T, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
    {
        let (key, version) = (self.key.as_str(), self.policy.version);
        match result {
            Ok(value) => {
                // Encoded before the await: the future holds bytes, not `&T`, so a
                // guarded future is `Send` without `T: Sync`.
                let payload = encode_ok(key, version, &value);
                let stored = self.store_result(held, payload).await;
                let outcome = if stored {
                    CallOutcome::Executed
                } else {
                    CallOutcome::NotStored
                };
                let out = Outcome::new(value, How::Executed, held.fence).with_stored(stored);
                (outcome.into(), Ok(out))
            }
            Err(err) => {
                if let Some(t) = hooks.terminal
                    && (t.is_terminal)(&err)
                {
                    let payload = encode_err(key, version, &err, &t);
                    let stored = self.store_result(held, payload).await;
                    let outcome = if stored {
                        CallOutcome::Executed
                    } else {
                        CallOutcome::NotStored
                    };
                    return (outcome.into(), Err(err));
                }
                match self.backstop_hit(&err, hooks.detect).await {
                    // Boxed: the user's lookup future stays out of the common path's size.
                    Some(Ok(constraint)) => {
                        return Box::pin(self.after_backstop(
                            Some(held),
                            constraint,
                            hooks.on_conflict,
                            err,
                        ))
                        .await;
                    }
                    Some(Err(wrong)) => {
                        self.release(held).await;
                        return (CallOutcome::Failed.into(), Err(wrong.into()));
                    }
                    None => {}
                }
                self.release(held).await;
                (CallOutcome::Released.into(), Err(err))
            }
        }
    }

    /// Stores an encoded record; true when the store confirmed it. Survives the
    /// caller's drop (see `Exec::finish`).
    async fn store_result(&self, held: &Held<'_>, payload: Result<Vec<u8>, Error>) -> bool {
        let key = self.key.as_str();
        let payload = match payload {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(key = %crate::observe::key_hash(key), error = %e, "result cannot be encoded; the claim will lapse");
                return false;
            }
        };
        let ttl = self.policy.ttl;
        let exec = &self.idem.inner.exec;
        let taken = Some(held.taken());
        let complete = Finish::Complete {
            payload,
            ttl,
            taken,
        };
        match exec.finish(held, complete).await {
            Ok(Owned::Applied) => true,
            Ok(Owned::NotOwner) => {
                tracing::warn!(
                    key = %crate::observe::key_hash(key),
                    "result not stored: the lease lapsed and another caller owns the key"
                );
                false
            }
            Err(e) => {
                tracing::warn!(key = %crate::observe::key_hash(key), error = %e, "result not stored; the caller still gets it");
                false
            }
        }
    }

    async fn release(&self, held: &Held<'_>) {
        let key = self.key.as_str();
        let exec = &self.idem.inner.exec;
        if let Err(e) = exec.finish(held, Finish::Release).await {
            tracing::warn!(key = %crate::observe::key_hash(key), error = %e, "release failed; the claim lapses with its lease");
        }
    }

    /// Is `err` a violation of this call's backstop constraint? The violation is
    /// extracted before the first await, so the future does not hold `&E` (a
    /// guarded future is then `Send` without `E: Sync`). `Some(Err(..))`: a
    /// unique violation under a backstop name the database does not have (a
    /// typo), returned as a typed error instead of the driver's raw text.
    pub(super) fn backstop_hit<'s, E>(
        &'s self,
        err: &E,
        detect: Option<DetectFn<E>>,
    ) -> impl Future<Output = Option<Result<String, Error>>> + 's {
        let found = self.policy.backstop.as_deref().and_then(|name| {
            let v = self.idem.find_violation(detect?(err)?)?;
            Some((name, v))
        });
        async move {
            let (name, v) = found?;
            if self.idem.violation_matches(name, &v).await {
                return Some(Ok(name.to_owned()));
            }
            let wrong = self.idem.misdeclared_backstop(name, &v).await?;
            Some(Err(Error::Config(wrong)))
        }
    }

    /// The backstop caught a duplicate: load the existing result with
    /// `on_conflict` (and store it for later replays), or report `Duplicate`.
    /// `held` is `None` on the degraded path, which holds no claim.
    pub(super) async fn after_backstop<T, E, C>(
        &self,
        held: Option<&Held<'_>>,
        constraint: String,
        on_conflict: C,
        err: E,
    ) -> Step<T, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
    {
        drop(err);
        let fence = held.map_or(Fence::NONE, |h| h.fence);
        let Some(lookup) = on_conflict.start() else {
            if let Some(h) = held {
                self.release(h).await;
            }
            let e = Error::Duplicate {
                key: self.key.as_str().to_owned(),
                constraint,
            };
            return (CallOutcome::Backstop.into(), Err(e.into()));
        };
        match lookup.await {
            Ok(value) => {
                let stored = match held {
                    Some(h) => {
                        let payload = encode_ok(self.key.as_str(), self.policy.version, &value);
                        self.store_result(h, payload).await
                    }
                    None => false,
                };
                let out = Outcome::new(value, How::Backstop, fence).with_stored(stored);
                (CallOutcome::Backstop.into(), Ok(out))
            }
            Err(e) => {
                if let Some(h) = held {
                    self.release(h).await;
                }
                (CallOutcome::Failed.into(), Err(e))
            }
        }
    }
}
