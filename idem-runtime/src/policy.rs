//! The per-function settings of a guarded call, shared by the macro descriptor
//! and the non-macro builder so both run the same protocol.

use std::borrow::Cow;
use std::time::Duration;

/// What a concurrent duplicate does while the first call is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// Wait (up to `wait`) and return the first call's result; if the first call
    /// fails, one waiter claims the key and runs.
    #[default]
    Wait,
    /// Fail at once with `Error::InProgress`.
    Reject,
}

/// Default result replay window: 24 hours.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default claim life without renewal: 30 seconds.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Default longest wait of a concurrent duplicate: 5 seconds, or the lease
/// if that is shorter (the wait used to be the whole lease, 30 s by default).
///
/// Chosen for HTTP, where most duplicates come from: a double-click or a
/// client retry should get the first call's result if it finishes soon, and
/// otherwise an answer it can act on (`Error::InProgress`, the HTTP layer's
/// `409` with `Retry-After`) well before the caller's own deadline: API
/// gateways cut requests at 29–60 s (AWS API Gateway 29 s, ALB and nginx 60 s),
/// browsers' and SDKs' retry timers commonly at 10–30 s, and a request thread
/// parked 30 s per duplicate is how a retry storm exhausts a service. 5 s
/// covers a typical body (tens to hundreds of milliseconds, a payment call of
/// a few seconds) with room, and stays under every common timeout. Longer
/// bodies set `wait` (or the configuration's `wait`) explicitly.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(5);
/// The longest duration any setting accepts (ttl, lease, wait, `max_hold`, the
/// operation timeout, the breaker cooldown): 3,650 days. Longer values are
/// `Error::Config`, not a panic.
pub use idem_duration::MAX_DURATION;
/// A call's store operations never take longer than `lease / LEASE_PER_OP`:
/// renewal runs every `lease / 3` and each renewal may take a whole operation
/// budget, so with a longer budget a lease could lapse while its body is still
/// running and renewing (a claim applied at t=0 whose reply came at 700 ms, with a
/// 1 s lease and an 800 ms timeout, would let a duplicate run at 1.01 s).
/// A handle's `op_timeout` longer than that is clamped for the call.
pub const LEASE_PER_OP: u32 = 3;

/// The settings of one guarded function or call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// How long a finished result is replayed.
    pub ttl: Duration,
    /// How long a claim lives without renewal; renewed every `lease / 3` while the
    /// body runs, so it only lapses when the process dies or hangs past `max_hold`.
    pub lease: Duration,
    /// How long a concurrent duplicate waits; `None` means [`DEFAULT_WAIT`]
    /// (5 s) or the lease if shorter.
    pub wait: Option<Duration>,
    /// Renewal stops after this long, so a hung body cannot hold a key forever;
    /// `None` means 20 × `lease`.
    pub max_hold: Option<Duration>,
    /// Wait for, or reject, concurrent duplicates.
    pub concurrent: Concurrency,
    /// Stored with the result; a different stored version is `Error::Codec`.
    pub version: u32,
    /// Run the body when the store is unavailable, relying on the backstop constraint.
    pub degrade: bool,
    /// While degraded, hold an in-process claim per key: same-process duplicates
    /// wait for the one running body and receive its value (outcome `waited`)
    /// instead of each running into the constraint. Requires `degrade`.
    pub degrade_local: bool,
    /// The unique constraint that backs this call in the business database.
    pub backstop: Option<Cow<'static, str>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            ttl: DEFAULT_TTL,
            lease: DEFAULT_LEASE,
            wait: None,
            max_hold: None,
            concurrent: Concurrency::Wait,
            version: 1,
            degrade: false,
            degrade_local: false,
            backstop: None,
        }
    }
}

impl Policy {
    pub(crate) fn wait_budget(&self) -> Duration {
        match self.concurrent {
            Concurrency::Reject => Duration::ZERO,
            Concurrency::Wait => self.wait.unwrap_or(self.lease.min(DEFAULT_WAIT)),
        }
    }

    pub(crate) fn max_hold(&self) -> Duration {
        self.max_hold
            .unwrap_or(self.lease.saturating_mul(20))
            .min(MAX_DURATION)
    }

    /// Checks the settings make sense together.
    pub fn validate(&self) -> Result<(), String> {
        if self.ttl.is_zero() || self.lease.is_zero() {
            return Err("ttl and lease must be greater than zero".into());
        }
        if self.max_hold.is_some_and(|d| d.is_zero()) {
            return Err("max_hold must be greater than zero".into());
        }
        for (name, d) in [
            ("ttl", Some(self.ttl)),
            ("lease", Some(self.lease)),
            ("wait", self.wait),
            ("max_hold", self.max_hold),
        ] {
            if let Some(d) = d {
                within_bounds(name, d)?;
            }
        }
        if let Some(h) = self.max_hold {
            idem_duration::check_hold(self.lease, h).map_err(|e| e.to_string())?;
        }
        if self.lease >= self.ttl {
            return Err(format!(
                "lease ({:?}) must be shorter than ttl ({:?})",
                self.lease, self.ttl
            ));
        }
        if self.degrade_local && !self.degrade {
            return Err(
                "degrade_local holds an in-process claim on the degraded path: \
                        it needs degrade = \"backstop\""
                    .into(),
            );
        }
        if self.degrade && self.backstop.is_none() {
            return Err("degrade = \"backstop\" needs a backstop constraint".into());
        }
        Ok(())
    }

    /// The budget of one store operation of this call: the handle's
    /// `op_timeout`, clamped to `lease / LEASE_PER_OP` so renewal keeps up.
    pub fn op_budget(&self, op_timeout: Duration) -> Duration {
        op_budget(op_timeout, self.lease)
    }
}

/// The one op-budget rule of every technique that holds a claim: the handle's
/// operation timeout, at most `lease / LEASE_PER_OP` (two renewal attempts fit
/// in one lease), at least 1 ms.
pub(crate) fn op_budget(op_timeout: Duration, lease: Duration) -> Duration {
    op_timeout
        .min(lease / LEASE_PER_OP)
        .max(Duration::from_millis(1))
}

/// Checks one duration against [`MAX_DURATION`].
pub(crate) fn within_bounds(name: &str, d: Duration) -> Result<(), String> {
    if d > MAX_DURATION {
        return Err(format!(
            "{name} ({d:?}) is longer than the maximum of {} days",
            MAX_DURATION.as_secs() / 86_400
        ));
    }
    Ok(())
}

/// How long one distributed lock may be held at most, as settings (also what
/// the macro's static description turns into). It lives with the guard's
/// [`Policy`] because the settings layer resolves both, below the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockPolicy {
    /// Life of the lock without renewal (default [`DEFAULT_LEASE`], 30 s).
    pub lease: Duration,
    /// How long a caller waits for a busy lock before `Error::LockBusy`
    /// (default: [`DEFAULT_WAIT`], 5 s, or the
    /// lease if shorter; zero tries once).
    pub wait: Option<Duration>,
    /// Upper bound on renewal for a hung body (default 20 × lease); not
    /// shorter than the lease (equal: never renewed), the rule of every
    /// technique (`idem_duration::check_hold`).
    pub max_hold: Option<Duration>,
}

impl Default for LockPolicy {
    fn default() -> Self {
        LockPolicy {
            lease: DEFAULT_LEASE,
            wait: None,
            max_hold: None,
        }
    }
}

impl LockPolicy {
    pub(crate) fn wait_budget(&self) -> Duration {
        self.wait.unwrap_or(self.lease.min(DEFAULT_WAIT))
    }

    pub(crate) fn max_hold(&self) -> Duration {
        self.max_hold
            .unwrap_or(self.lease.saturating_mul(20))
            .min(MAX_DURATION)
    }

    /// Checks the settings make sense together.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease.is_zero() {
            return Err("the lock's lease must be greater than zero".into());
        }
        for (name, d) in [
            ("lease", Some(self.lease)),
            ("wait", self.wait),
            ("max_hold", self.max_hold),
        ] {
            if let Some(d) = d {
                within_bounds(name, d)?;
            }
        }
        if let Some(m) = self.max_hold {
            idem_duration::check_hold(self.lease, m).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime side of the one `max_hold` rule (`idem_duration::check_hold`;
    /// the macro side is pinned in `idem-macros`' `validate.rs`): a hold equal
    /// to the lease is accepted (never renewed), a shorter one refused, for the
    /// guard's and the lock's settings alike.
    #[test]
    fn max_hold_rule_is_check_hold_for_guards_and_locks() {
        let lease = Duration::from_secs(3);
        for (hold, ok) in [
            (lease, true),
            (lease * 20, true),
            (lease - Duration::from_millis(1), false),
        ] {
            assert_eq!(idem_duration::check_hold(lease, hold).is_ok(), ok);
            let guard = Policy {
                lease,
                max_hold: Some(hold),
                ..Policy::default()
            };
            assert_eq!(guard.validate().is_ok(), ok, "guard, hold {hold:?}");
            let lock = LockPolicy {
                lease,
                wait: None,
                max_hold: Some(hold),
            };
            assert_eq!(lock.validate().is_ok(), ok, "lock, hold {hold:?}");
        }
    }
}
