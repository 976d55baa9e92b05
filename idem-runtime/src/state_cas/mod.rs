//! The state check-and-set: `idem.state_cas(scene, parts)
//! .apply(Some("WAIT_PAY"), "PAID", ttl)` moves a key's state from the expected
//! value to the new one in one atomic store step (one script on Redis), and says
//! which of three things happened ([`StateCas`]): applied, already in the
//! target (a repeated request: do nothing, answer success), or another state.
//! A fast front for a state machine whose truth is in a database: the database
//! transition stays the authority, the check-and-set turns most repeats away
//! with one round trip.

use std::time::Duration;

use crate::error::Error;
use crate::fence::Fence;
use crate::handle::Idem;
use crate::key::{Key, KeyPart};
use crate::observe::{self, CallOutcome, Op, Technique, instrument::Fenced};
pub use crate::store::state::StateCas;

/// A state key: `idem.state_cas(scene, parts)`.
#[derive(Debug)]
pub struct StateKey<'h> {
    idem: &'h Idem,
    key: Key,
}

impl Idem {
    /// The state check-and-set on `scene` and the `parts` (escaped, as every
    /// key). Needs a store that offers it (memory, Redis, Redis Cluster).
    pub fn state_cas(&self, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> StateKey<'_> {
        StateKey {
            idem: self,
            key: self.key(scene, parts),
        }
    }
}

/// The call's result as the span sees it (no fence).
struct Cas(Result<StateCas, Error>);

impl Fenced for Cas {
    fn fence(&self) -> Option<Fence> {
        None
    }
}

impl StateKey<'_> {
    /// The rendered key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// `from` → `to`, keeping the state for `ttl` (`from = None`: only when the
    /// key has no state yet). Counted as `applied`, `already_applied` or
    /// `invalid_transition` under `technique = "state_cas"`.
    pub async fn apply(
        &self,
        from: Option<&str>,
        to: &str,
        ttl: Duration,
    ) -> Result<StateCas, Error> {
        let recorder = &self.idem.inner.recorder;
        let cas = observe::instrument(recorder, Technique::StateCas, &self.key, || async {
            let r = self.apply_now(from, to, ttl).await;
            let outcome = match &r {
                Ok(StateCas::Applied) => CallOutcome::Applied,
                Ok(StateCas::AlreadyApplied) => CallOutcome::AlreadyApplied,
                Ok(StateCas::InvalidTransition { .. }) => CallOutcome::InvalidTransition,
                Err(_) => CallOutcome::Failed,
            };
            (outcome, Cas(r))
        })
        .await;
        cas.0
    }

    async fn apply_now(
        &self,
        from: Option<&str>,
        to: &str,
        ttl: Duration,
    ) -> Result<StateCas, Error> {
        if ttl.is_zero() {
            return Err(Error::Config(
                "a state's ttl must be greater than zero".into(),
            ));
        }
        crate::policy::within_bounds("ttl", ttl).map_err(Error::Config)?;
        self.idem
            .scenes()
            .register_key(&self.key, self.idem.key_namespace())?;
        let exec = &self.idem.inner.exec;
        let states = exec.store.states().ok_or_else(|| {
            Error::Config(format!(
                "the `{}` store offers no state check-and-set; use memory, Redis or Redis Cluster",
                exec.store.name()
            ))
        })?;
        let k = self.key.as_str();
        // One owner per call: the engine's same-owner retry after a lost reply
        // is then told `Applied` for its own attempt.
        let owner = crate::store::Owner::fresh();
        exec.op(Op::StateCas, k, || {
            states.state_cas(k, owner, from, to, ttl)
        })
        .await
        .map_err(|e| self.idem.store_error(k, e))
    }

    /// The key's current state (`None`: no state, or expired).
    pub async fn current(&self) -> Result<Option<String>, Error> {
        let exec = &self.idem.inner.exec;
        let states = exec.store.states().ok_or_else(|| {
            Error::Config(format!(
                "the `{}` store offers no state check-and-set",
                exec.store.name()
            ))
        })?;
        let k = self.key.as_str();
        exec.op(Op::Inspect, k, || states.state(k))
            .await
            .map_err(|e| self.idem.store_error(k, e))
    }
}
