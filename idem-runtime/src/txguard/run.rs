//! The transactional guard's protocol (see the module docs of
//! [`crate::txguard`]): savepoint (unless told not to), claim in the
//! caller's transaction, body, complete or undo; replays of committed records.

use serde::{Serialize, de::DeserializeOwned};

use super::statements::{TxClaim, TxFail, TxStatements};
use super::{TxDb, TxGuard, front};
use crate::db::caller_tx::tx_error;
use crate::db::savepoint::{Scope, compensated};
use crate::db::{InTx, SqlConn as _, TxBody};
use crate::error::Error;
use crate::fence::Fence;
use crate::guard::replay::{encode_ok, mismatch, replay};
use crate::observe::{CallOutcome, Technique, instrument};
use crate::outcome::{How, Outcome};
use crate::store::{Claim, ClaimRequest, DoneRecord, Owner};

type Step<T, E> = (CallOutcome, Result<Outcome<T>, E>);

impl<'g, 't, DB: TxDb> TxGuard<'_, 'g, 't, DB> {
    /// Runs `body` on the caller's transaction at most once for this key:
    /// the first call's value is stored in the same transaction; a call that
    /// finds a committed record returns it without running the body. The
    /// caller commits (or rolls back) `tx` afterwards, as usual.
    pub async fn run<T, E, B>(self, body: B) -> Result<Outcome<T>, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        B: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>, Fence) -> TxBody<'a, T, E> + Send,
    {
        let idem = self.guard.idem;
        if let Err(e) = idem
            .scenes()
            .register_key(&self.guard.key, idem.key_namespace())
        {
            return Err(e.into());
        }
        self.run_registered(body).await
    }

    /// [`run`](Self::run) for a caller whose scene is registered already
    /// (the macro registers its function's).
    pub(crate) async fn run_registered<T, E, B>(self, body: B) -> Result<Outcome<T>, E>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        B: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>, Fence) -> TxBody<'a, T, E> + Send,
    {
        let TxGuard {
            guard,
            tx,
            savepoint,
        } = self;
        let idem = guard.idem;
        let recorder = &idem.inner.recorder;
        let key = &guard.key;
        let mut cx = InTx::new(tx);
        instrument(recorder, Technique::TxGuard, key, || {
            protocol(&guard, &mut cx, savepoint, body)
        })
        .await
    }
}

/// The steps, returning the outcome label with the result.
async fn protocol<'g, 't, DB, T, E, B>(
    g: &crate::guard::Guard<'_>,
    cx: &mut InTx<'g, 't, DB>,
    savepoint: bool,
    body: B,
) -> Step<T, E>
where
    DB: TxDb,
    T: Serialize + DeserializeOwned + Send,
    E: From<Error> + Send,
    B: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>, Fence) -> TxBody<'a, T, E>,
{
    let key = g.key.as_str();
    let failed = |e: Error| (CallOutcome::Failed, Err(E::from(e)));
    if let Err(e) = g.policy.validate() {
        return failed(Error::Config(e));
    }
    let fp = match &g.fingerprint {
        Ok(fp) => *fp,
        Err(e) => return failed(Error::codec(key, e)),
    };
    if g.idem.is_disabled() {
        // The guard is off (`IdemBuilder::disabled`): the body runs in the
        // caller's transaction with no record, counted as `unguarded`.
        let out = body(cx, Fence::NONE).await;
        let out = out.map(|v| Outcome::new(v, How::Unguarded, Fence::NONE).with_stored(false));
        return (CallOutcome::Unguarded, out);
    }
    if let Some(rec) = front::finished(g.idem, key).await {
        return replayed(g, key, fp, &rec, How::Replayed);
    }
    let st = super::tables::of(g.idem).statements(DB::DIALECT);
    let owner = Owner::fresh();
    let sp = match Scope::take(cx, "tx", savepoint).await {
        Ok(sp) => sp,
        Err(e) => return failed(tx_error(key, e)),
    };
    // The row commits unfinished only if this call is dropped mid-body and the
    // caller then commits anyway: the claim's lease bounds how long it blocks
    // the key then (issue 24, b). A concurrent duplicate waits on the row lock,
    // not on this expiry.
    let req = ClaimRequest {
        key,
        owner,
        fingerprint: fp,
        lease: g.policy.lease,
    };
    let TxClaim {
        claim,
        waited,
        remaining,
    } = match st.claim(&mut cx.any(), req).await {
        Ok(c) => c,
        Err(f) => {
            undo(st, cx, sp, key, owner).await;
            return failed(fail(g, key, f));
        }
    };
    let fence = match claim {
        Claim::Claimed { fence } => {
            if let Err(e) = front::note_claim(g.idem, DB::DIALECT, &mut cx.any(), key).await {
                undo(st, cx, sp, key, owner).await;
                return failed(tx_error(key, e));
            }
            fence
        }
        Claim::Done(rec) => {
            let learn = match front::learnable(g.idem, DB::DIALECT, &mut cx.any(), key).await {
                Ok(learn) => {
                    if let Err(e) = sp.keep(cx).await {
                        return failed(tx_error(key, e));
                    }
                    learn
                }
                Err(e) => {
                    // Not known committed: the front store is not taught.
                    tracing::debug!(key, error = %e, "idem: claim note unreadable; front store not taught");
                    // Nothing of this call's was written: no compensation.
                    let _ = sp.undo(cx).await;
                    false
                }
            };
            let how = if waited { How::Waited } else { How::Replayed };
            let step = replayed(g, key, fp, &rec, how);
            if learn && step.1.is_ok() {
                front::publish(g.idem, key, &rec, remaining).await;
            }
            return step;
        }
        Claim::Busy {
            fingerprint,
            remaining,
        } => {
            if let Err(e) = sp.keep(cx).await {
                return failed(tx_error(key, e));
            }
            if fingerprint.conflicts_with(&fp) {
                return (
                    CallOutcome::Mismatch,
                    Err(mismatch(key, fingerprint, fp).into()),
                );
            }
            let e = Error::InProgress {
                key: key.to_owned(),
                waited: std::time::Duration::ZERO,
                lease_left: Some(remaining),
            };
            return (CallOutcome::InProgress, Err(e.into()));
        }
    };
    let out = body(cx, fence).await;
    match out {
        Ok(v) => {
            let stored = match encode_ok(key, g.policy.version, &v) {
                Ok(payload) => complete(g, st, cx, req, &payload).await,
                Err(e) => {
                    undo(st, cx, sp, key, owner).await;
                    return failed(e);
                }
            };
            match stored {
                Ok(true) => match sp.keep(cx).await {
                    Ok(()) => (
                        CallOutcome::Executed,
                        Ok(Outcome::new(v, How::Executed, fence)),
                    ),
                    Err(e) => failed(tx_error(key, e)),
                },
                Ok(false) => {
                    undo(st, cx, sp, key, owner).await;
                    failed(Error::Database {
                        key: key.to_owned(),
                        detail: "the claim row vanished from the transaction before its result was stored".into(),
                    })
                }
                Err(f) => {
                    undo(st, cx, sp, key, owner).await;
                    failed(fail(g, key, f))
                }
            }
        }
        Err(e) => {
            undo(st, cx, sp, key, owner).await;
            (CallOutcome::Released, Err(e))
        }
    }
}

/// Undoes this call's claim after a failure: rolls back to the savepoint, or,
/// without one, deletes the claim row (the compensating statement; on
/// PostgreSQL it fails after a failed statement, and the aborted transaction
/// can only roll back).
async fn undo<DB: TxDb>(
    st: &crate::txguard::statements::TxStatements,
    cx: &mut InTx<'_, '_, DB>,
    sp: Scope,
    key: &str,
    owner: Owner,
) {
    if sp.undo(cx).await {
        compensated(key, st.release(&mut cx.any(), key, owner).await);
    }
}

/// Stores the result on the claim row. A body that outlived the claim's lease
/// finds its own row expired (no one else can have taken it: the row is
/// locked by this transaction): the claim is taken again by the same owner,
/// for the ttl, and completed.
async fn complete<DB: TxDb>(
    g: &crate::guard::Guard<'_>,
    st: &TxStatements,
    cx: &mut InTx<'_, '_, DB>,
    req: ClaimRequest<'_>,
    payload: &[u8],
) -> Result<bool, TxFail> {
    let ttl = g.policy.ttl;
    if st
        .complete(&mut cx.any(), req.key, req.owner, payload, ttl)
        .await?
    {
        return Ok(true);
    }
    let again = ClaimRequest { lease: ttl, ..req };
    match st.claim(&mut cx.any(), again).await?.claim {
        Claim::Claimed { .. } => {
            st.complete(&mut cx.any(), req.key, req.owner, payload, ttl)
                .await
        }
        _ => Ok(false),
    }
}

/// A committed record found: the fingerprint check, then the stored value.
fn replayed<T, E>(
    g: &crate::guard::Guard<'_>,
    key: &str,
    fp: crate::fingerprint::Fingerprint,
    rec: &DoneRecord,
    how: How,
) -> Step<T, E>
where
    T: DeserializeOwned,
    E: From<Error>,
{
    if rec.fingerprint.conflicts_with(&fp) {
        return (
            CallOutcome::Mismatch,
            Err(mismatch(key, rec.fingerprint, fp).into()),
        );
    }
    match replay(key, g.policy.version, rec, how, None) {
        Ok(v) => (how.into(), Ok(v)),
        Err(e) => (CallOutcome::Failed, Err(e)),
    }
}

/// A failed statement of the claim or complete, as the caller's error.
fn fail(g: &crate::guard::Guard<'_>, key: &str, f: TxFail) -> Error {
    match f {
        TxFail::Db(e) => tx_error(key, e),
        TxFail::Store(e) => g.idem.store_error(key, e),
    }
}
