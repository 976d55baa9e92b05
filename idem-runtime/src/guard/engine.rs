//! The guard protocol: claim or read, wait or reject, run with lease renewal,
//! complete or release. Both the macros and the non-macro builder end here.
//!
//! ```text
//! claim ──Claimed(fence)──> run body (renew every lease/3, up to max_hold)
//!   │                        ├─ Ok            -> complete(result, ttl)      -> Executed
//!   │                        ├─ Err terminal  -> complete(error, ttl)       -> Err (replayed later)
//!   │                        ├─ Err backstop  -> on_conflict -> complete    -> Backstop
//!   │                        └─ Err           -> release                    -> Err
//!   ├─Done(record)──> fingerprint check -> decode -> Replayed
//!   ├─Busy──> reject: InProgress | wait: sleep or local wake-up, claim again
//!   └─unavailable──> StoreUnavailable, or degrade: run body, backstop decides
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};
use tokio::time::Instant;
use tracing::Instrument;

use super::ops::{ClaimGuard, Inflight};
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::handle::Idem;
use crate::hooks::{Hooks, OnConflict, Terminal};
use crate::key::Key;
use crate::outcome::{Fence, How, Outcome};
use crate::policy::{Concurrency, Policy};
use crate::record::{self, Kind};
use crate::store::{Claim, ClaimRequest, DoneRecord, Owned, Owner, StoreError};

/// One call's fixed inputs, shared by the engine's steps.
pub(crate) struct Call<'a> {
    pub(crate) idem: &'a Idem,
    pub(crate) key: &'a Key,
    pub(crate) policy: &'a Policy,
    pub(crate) technique: &'static str,
}

impl Call<'_> {
    pub(crate) async fn execute<T, E, C, B, Fut>(
        &self,
        fingerprint: Result<Fingerprint, String>,
        hooks: Hooks<E, C>,
        body: B,
    ) -> Result<Outcome<T>, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let span = tracing::info_span!(
            "idem",
            technique = self.technique,
            scope = self.key.scope(),
            key = self.key.as_str(),
            outcome = tracing::field::Empty,
            fence = tracing::field::Empty,
        );
        // No subscriber wants the span: skip entering and leaving it on every poll
        // (and the `log`-compatibility activity records that would go with it).
        let (outcome, result) = if span.is_disabled() {
            self.protocol(fingerprint, hooks, body).await
        } else {
            let r = self
                .protocol(fingerprint, hooks, body)
                .instrument(span.clone())
                .await;
            span.record("outcome", r.0);
            if let Ok(o) = &r.1 {
                span.record("fence", o.fence().get());
            }
            r
        };
        self.idem.inner.recorder.record(
            self.technique,
            self.key.scope(),
            self.key.as_str(),
            outcome,
        );
        result
    }

    async fn protocol<T, E, C, B, Fut>(
        &self,
        fingerprint: Result<Fingerprint, String>,
        hooks: Hooks<E, C>,
        body: B,
    ) -> (&'static str, Result<Outcome<T>, E>)
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let key = self.key.as_str();
        let fp = match fingerprint {
            Ok(fp) => fp,
            Err(e) => return ("failed", Err(Error::codec(key, e).into())),
        };
        if let Some(b) = &self.policy.backstop {
            self.idem.note_backstop(b);
        }
        let owner = Owner::random();
        // Armed before the claim is sent: a caller cancelled while the claim is in
        // flight still releases it (release is owner-checked, so a claim that never
        // applied is untouched).
        let mut claim_guard = ClaimGuard::new(self.idem, key, owner);
        // The wait budget runs from the start of the call (a slow first claim
        // counts against it: callers get their answer within `wait` + one operation).
        let started = Instant::now();
        let wait_budget = self.policy.wait_budget();
        let mut waited = false;
        let mut backoff = Duration::from_millis(2);
        let fence = loop {
            let req = ClaimRequest {
                key,
                owner,
                fingerprint: fp,
                lease: self.policy.lease,
            };
            // Set when the claim is handed to the store (the breaker let it through).
            let mut sent = false;
            match self
                .idem
                .op("claim", key, || {
                    sent = true;
                    self.idem.inner.store.claim(req)
                })
                .await
            {
                Ok(Claim::Claimed { fence }) => break fence,
                Ok(Claim::Done(rec)) => {
                    claim_guard.disarm();
                    if rec.fingerprint.conflicts_with(&fp) {
                        return ("mismatch", Err(mismatch(key, rec.fingerprint, fp).into()));
                    }
                    let how = if waited { How::Waited } else { How::Replayed };
                    return (
                        how.as_str(),
                        replay(key, self.policy.version, &rec, how, hooks.terminal),
                    );
                }
                Ok(Claim::Busy {
                    fingerprint,
                    remaining,
                }) => {
                    if fingerprint.conflicts_with(&fp) {
                        claim_guard.disarm();
                        return ("mismatch", Err(mismatch(key, fingerprint, fp).into()));
                    }
                    let elapsed = started.elapsed();
                    if self.policy.concurrent == Concurrency::Reject || elapsed >= wait_budget {
                        claim_guard.disarm();
                        return (
                            "in_progress",
                            Err(Error::InProgress {
                                key: key.to_owned(),
                                waited: elapsed,
                            }
                            .into()),
                        );
                    }
                    waited = true;
                    let budget = (wait_budget - elapsed).min(remaining + Duration::from_millis(1));
                    if !self.idem.wait_local(key, budget).await {
                        tokio::time::sleep(backoff.min(budget)).await;
                        backoff = (backoff * 2).min(Duration::from_millis(50));
                    }
                }
                Err(e) => {
                    // A claim that got no answer may have applied, or may still apply
                    // (a slow store runs it after our timeout), and would block the key
                    // for a whole lease from then: the guard stays armed and releases
                    // it in the background when this call ends (owner-checked: harmless
                    // if it never applied). Only when nothing was sent (the breaker
                    // refused the call) is there nothing to release. An open breaker is
                    // no reason to skip it: the failure that opened it may be this very
                    // claim, on a store that is slow rather than down, and its orphan
                    // then held the key a lease past recovery (issue 18, SQLite seed 3).
                    // Only claims actually sent release, so the breaker still bounds them.
                    if !sent || !matches!(e, StoreError::Unavailable(_)) {
                        claim_guard.disarm();
                    }
                    if matches!(e, StoreError::Unavailable(_)) && self.policy.degrade {
                        // Boxed: a cold path kept out of every call's future.
                        return Box::pin(self.degraded(hooks, body)).await;
                    }
                    return ("failed", Err(self.idem.store_error(key, e).into()));
                }
            }
        };

        // We hold the key. Local duplicates wait on `inflight` instead of polling.
        let _local = Inflight::register(self.idem, key);
        claim_guard.body_started();
        let result = self.run_body(owner, fence, body).await;
        claim_guard.disarm();

        match result {
            Ok(value) => {
                self.complete(owner, &value, Kind::Ok, |v, k, ver| {
                    record::encode(k, ver, Kind::Ok, v)
                })
                .await;
                ("executed", Ok(Outcome::new(value, How::Executed, fence)))
            }
            Err(err) => {
                if let Some(t) = hooks.terminal
                    && (t.is_terminal)(&err)
                {
                    self.complete(owner, &err, Kind::Err, |e, k, ver| {
                        encode_err(k, ver, e, &t)
                    })
                    .await;
                    return ("executed", Err(err));
                }
                if let Some(constraint) = self.backstop_hit(&err, hooks.detect).await {
                    // Boxed: the user's lookup future stays out of the common path's size.
                    return Box::pin(self.after_backstop(
                        owner,
                        fence,
                        constraint,
                        hooks.on_conflict,
                        err,
                    ))
                    .await;
                }
                self.release(owner).await;
                ("released", Err(err))
            }
        }
    }

    /// Runs the body while renewing the lease every `lease / 3`, until `max_hold`.
    /// Renewal lives in this future: if the caller drops it, renewal stops and the
    /// lease lapses, so no other caller can run the body while ours may still commit.
    async fn run_body<T, E, B, Fut>(&self, owner: Owner, fence: Fence, body: B) -> Result<T, E>
    where
        B: FnOnce(Fence) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let body = pin!(body(fence));
        let hold_until = Instant::now() + self.policy.max_hold();
        tokio::select! {
            biased;
            r = body => r,
            // Boxed: renewal (timers, a store operation) would otherwise add its
            // size to the future of every call, replays included.
            never = Box::pin(self.renew_forever(owner, hold_until)) => match never {},
        }
    }

    /// Renews the lease every `lease / 3` until `hold_until`, or parks once the
    /// lease is lost. Never returns: the body's `select!` ends it.
    async fn renew_forever(&self, owner: Owner, hold_until: Instant) -> Infallible {
        let key = self.key.as_str();
        let lease = self.policy.lease;
        let every = (lease / 3).max(Duration::from_millis(1));
        let mut next = Instant::now() + every;
        loop {
            tokio::time::sleep_until(next).await;
            if Instant::now() + lease > hold_until {
                tracing::warn!(key, "max_hold reached: lease renewal stops and will lapse");
                return std::future::pending().await;
            }
            match self
                .idem
                .op("renew", key, || {
                    self.idem.inner.store.renew(key, owner, lease)
                })
                .await
            {
                Ok(Owned::Applied) => {}
                Ok(Owned::NotOwner) => {
                    tracing::warn!(
                        key,
                        "lease lost while the body runs: only fenced writes are safe now"
                    );
                    return std::future::pending().await;
                }
                Err(e) => tracing::warn!(key, error = %e, "lease renewal failed; retrying"),
            }
            next += every;
        }
    }

    /// Stores the result. Encodes before the first await, so the returned future
    /// holds bytes, not `&V`: a guarded future is then `Send` without `V: Sync`.
    fn complete<'s, V>(
        &'s self,
        owner: Owner,
        value: &V,
        _kind: Kind,
        encode: impl FnOnce(&V, &str, u32) -> Result<Vec<u8>, Error>,
    ) -> impl Future<Output = ()> + 's {
        let payload = encode(value, self.key.as_str(), self.policy.version);
        self.store_payload(owner, payload)
    }

    async fn store_payload(&self, owner: Owner, payload: Result<Vec<u8>, Error>) {
        let key = self.key.as_str();
        let payload = match payload {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(key, error = %e, "result cannot be encoded; the claim will lapse");
                return;
            }
        };
        let ttl = self.policy.ttl;
        match self
            .idem
            .op("complete", key, || {
                self.idem.inner.store.complete(key, owner, &payload, ttl)
            })
            .await
        {
            Ok(Owned::Applied) => {}
            Ok(Owned::NotOwner) => {
                tracing::warn!(
                    key,
                    "result not stored: the lease lapsed and another caller owns the key"
                )
            }
            Err(e) => {
                tracing::warn!(key, error = %e, "result not stored; the caller still gets it")
            }
        }
    }

    async fn release(&self, owner: Owner) {
        let key = self.key.as_str();
        if let Err(e) = self
            .idem
            .op("release", key, || self.idem.inner.store.release(key, owner))
            .await
        {
            tracing::warn!(key, error = %e, "release failed; the claim lapses with its lease");
        }
    }

    /// Is `err` a violation of this call's backstop constraint? The violation is
    /// extracted before the first await, so the future does not hold `&E` (a
    /// guarded future is then `Send` without `E: Sync`).
    fn backstop_hit<'s, E>(
        &'s self,
        err: &E,
        detect: Option<crate::hooks::DetectFn<E>>,
    ) -> impl Future<Output = Option<String>> + 's {
        let found = self.policy.backstop.as_deref().and_then(|name| {
            let v = crate::backstop::find_unique_violation(detect?(err)?)?;
            Some((name, v))
        });
        async move {
            let (name, v) = found?;
            self.idem
                .violation_matches(name, &v)
                .await
                .then(|| name.to_owned())
        }
    }

    async fn after_backstop<T, E, C>(
        &self,
        owner: Owner,
        fence: Fence,
        constraint: String,
        on_conflict: C,
        err: E,
    ) -> (&'static str, Result<Outcome<T>, E>)
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
    {
        drop(err);
        let Some(lookup) = on_conflict.start() else {
            // The degraded path holds no claim: a release would only cost another
            // operation timeout against the store that is down.
            if owner != DEGRADED_OWNER {
                self.release(owner).await;
            }
            return (
                "backstop",
                Err(Error::Duplicate {
                    key: self.key.as_str().to_owned(),
                    constraint,
                }
                .into()),
            );
        };
        match lookup.await {
            Ok(value) => {
                if owner != DEGRADED_OWNER {
                    self.complete(owner, &value, Kind::Ok, |v, k, ver| {
                        record::encode(k, ver, Kind::Ok, v)
                    })
                    .await;
                }
                ("backstop", Ok(Outcome::new(value, How::Backstop, fence)))
            }
            Err(e) => {
                if owner != DEGRADED_OWNER {
                    self.release(owner).await;
                }
                ("failed", Err(e))
            }
        }
    }

    /// `degrade = "backstop"`: the store is down, the body runs unguarded and the
    /// database constraint decides. The fence is `Fence::NONE`.
    async fn degraded<T, E, C, B, Fut>(
        &self,
        hooks: Hooks<E, C>,
        body: B,
    ) -> (&'static str, Result<Outcome<T>, E>)
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        tracing::warn!(
            key = self.key.as_str(),
            "store unavailable: running under the backstop only"
        );
        match body(Fence::NONE).await {
            Ok(v) => ("degraded", Ok(Outcome::new(v, How::Degraded, Fence::NONE))),
            Err(err) => match self.backstop_hit(&err, hooks.detect).await {
                Some(c) => {
                    self.after_backstop(DEGRADED_OWNER, Fence::NONE, c, hooks.on_conflict, err)
                        .await
                }
                None => ("failed", Err(err)),
            },
        }
    }
}

/// Marks the degraded path, which holds no claim to complete or release.
const DEGRADED_OWNER: Owner = Owner(0);

fn mismatch(key: &str, stored: Fingerprint, given: Fingerprint) -> Error {
    Error::PayloadMismatch {
        key: key.to_owned(),
        stored: stored.to_hex(),
        given: given.to_hex(),
    }
}

fn encode_err<E>(key: &str, version: u32, e: &E, t: &Terminal<E>) -> Result<Vec<u8>, Error> {
    let json = (t.encode)(e).map_err(|x| Error::codec(key, x))?;
    Ok(record::encode_json(version, Kind::Err, &json))
}

fn replay<T, E>(
    key: &str,
    version: u32,
    rec: &DoneRecord,
    how: How,
    terminal: Option<Terminal<E>>,
) -> Result<Outcome<T>, E>
where
    T: DeserializeOwned,
    E: From<Error>,
{
    let (kind, json) = record::open(key, version, &rec.payload)?;
    match kind {
        Kind::Ok => Ok(Outcome::new(record::decode(key, json)?, how, rec.fence)),
        Kind::Err => match terminal {
            Some(t) => Err((t.decode)(json).map_err(|e| Error::codec(key, e))?),
            None => Err(Error::codec(
                key,
                "a terminal error is stored but this function declares no `terminal` predicate",
            )
            .into()),
        },
    }
}
