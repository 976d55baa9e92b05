//! Run-time settings: a handle-level default and per-scene overrides of the
//! durations (`ttl`, `lease`, `wait`, `max_hold`), and the switch that turns
//! the guard off. Both derive `serde::Deserialize`, so they can come from the
//! service's configuration file or environment.
//!
//! Precedence, highest first:
//! 1. an option written in code: `#[idempotent(ttl = ..)]` (literal or
//!    expression), `guard(..).ttl(..)`, `lock(..).lease(..)`;
//! 2. the scene's entry in [`Config::scenes`] ([`IdemBuilder::scene`]);
//! 3. the handle default, [`Config::defaults`] ([`IdemBuilder::defaults`]);
//! 4. the built-in defaults ([`DEFAULT_TTL`], [`DEFAULT_LEASE`],
//!    [`DEFAULT_WAIT`], `max_hold` = 20 × lease).
//!
//! Code wins over configuration on purpose: a `lease` written beside a body
//! is sized for that body (shortening it from a config file could let a
//! duplicate run while the first is still writing), and the reader of the
//! function should be able to trust what the attribute says. A value meant to
//! be tuned in operation is written as an expression reading it
//! (`ttl = settings.order_ttl()`) or left out of the attribute, so the
//! configuration decides.
//!
//! [`IdemBuilder::scene`]: crate::IdemBuilder::scene
//! [`IdemBuilder::defaults`]: crate::IdemBuilder::defaults
//! [`DEFAULT_TTL`]: crate::policy::DEFAULT_TTL
//! [`DEFAULT_LEASE`]: crate::policy::DEFAULT_LEASE
//! [`DEFAULT_WAIT`]: crate::policy::DEFAULT_WAIT

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::policy::LockPolicy;
use crate::policy::Policy;

/// Durations of guarded calls and locks, each optional: what is left `None`
/// falls through to the next level (see the [module docs](self)).
///
/// Deserializes from text in the macros' grammar (`"30s"`, `"1h 30m"`,
/// `"2 days"`) or from a number of milliseconds:
///
/// ```
/// use std::time::Duration;
/// use idem::settings::Settings;
/// let s: Settings = serde_json::from_str(r#"{ "ttl": "2h", "wait": 1500 }"#).unwrap();
/// assert_eq!(s.ttl, Some(Duration::from_secs(7_200)));
/// assert_eq!(s.wait, Some(Duration::from_millis(1_500)));
/// assert_eq!(s.lease, None); // the next level decides
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Result replay window (guards only).
    #[serde(deserialize_with = "duration")]
    pub ttl: Option<Duration>,
    /// Claim or lock life without renewal.
    #[serde(deserialize_with = "duration")]
    pub lease: Option<Duration>,
    /// How long a concurrent duplicate (or a busy lock's caller) waits.
    #[serde(deserialize_with = "duration")]
    pub wait: Option<Duration>,
    /// Renewal bound of a hung body.
    #[serde(deserialize_with = "duration")]
    pub max_hold: Option<Duration>,
}

impl Settings {
    /// Nothing set: every level below decides.
    pub const NONE: Settings = Settings {
        ttl: None,
        lease: None,
        wait: None,
        max_hold: None,
    };

    /// These settings where given, `base`'s elsewhere.
    pub fn or(self, base: Settings) -> Settings {
        Settings {
            ttl: self.ttl.or(base.ttl),
            lease: self.lease.or(base.lease),
            wait: self.wait.or(base.wait),
            max_hold: self.max_hold.or(base.max_hold),
        }
    }

    /// A zero duration computed at run time (a literal one is a compile
    /// error, a configured one a deserialize error) is `Err` naming it. A zero
    /// `wait` is allowed: it means "do not wait" (as `Guard::wait` and
    /// `Lock::wait` take it).
    pub(crate) fn check_nonzero(&self) -> Result<(), String> {
        for (name, d) in [
            ("ttl", self.ttl),
            ("lease", self.lease),
            ("max_hold", self.max_hold),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(format!("`{name}` must be greater than zero"));
            }
        }
        Ok(())
    }

    /// Writes the given settings into a guard's policy.
    pub(crate) fn apply(&self, p: &mut Policy) {
        if let Some(d) = self.ttl {
            p.ttl = d;
        }
        if let Some(d) = self.lease {
            p.lease = d;
        }
        if self.wait.is_some() {
            p.wait = self.wait;
        }
        if self.max_hold.is_some() {
            p.max_hold = self.max_hold;
        }
    }

    /// Writes the given settings into a lock's policy (`ttl` has no meaning there).
    pub(crate) fn apply_lock(&self, p: &mut LockPolicy) {
        if let Some(d) = self.lease {
            p.lease = d;
        }
        if self.wait.is_some() {
            p.wait = self.wait;
        }
        if self.max_hold.is_some() {
            p.max_hold = self.max_hold;
        }
    }
}

/// A handle's whole run-time configuration, e.g. the `[idem]` table of a
/// service's config file:
///
/// ```
/// use std::time::Duration;
/// use idem::settings::Config;
/// let cfg: Config = serde_json::from_str(r#"{
///     "defaults": { "wait": "2s" },
///     "scenes": { "order-create": { "ttl": "7d", "lease": "1m" } }
/// }"#).unwrap();
/// let idem = idem::Idem::builder()
///     .store(idem::MemoryStore::new())
///     .config(cfg)
///     .build()?;
/// # Ok::<(), idem::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Runs every guarded body unguarded (see [`IdemBuilder::disabled`]).
    ///
    /// [`IdemBuilder::disabled`]: crate::IdemBuilder::disabled
    pub disabled: bool,
    /// The handle-level defaults.
    pub defaults: Settings,
    /// Per-scene overrides, by the scene as the key template writes it (the
    /// literal prefix before the first placeholder, without its `:`; for
    /// `idem.guard(scene, ..)`, `scene`).
    pub scenes: HashMap<String, Settings>,
}

/// The configuration resolved once at `build()`: one policy per level, so a
/// call copies one (no merging on the hot path).
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub(crate) disabled: bool,
    base: Policy,
    base_lock: LockPolicy,
    scenes: HashMap<Box<str>, (Policy, LockPolicy)>,
}

impl Resolved {
    /// Resolves `cfg` over the built-in defaults; a scene or default whose
    /// durations contradict each other is `Err` naming it.
    pub(crate) fn new(cfg: Config) -> Result<Resolved, String> {
        let resolve = |s: Settings, what: &str| {
            let mut p = Policy::default();
            s.apply(&mut p);
            p.validate()
                .map_err(|e| format!("{what} in the idem configuration: {e}"))?;
            let mut l = LockPolicy::default();
            s.apply_lock(&mut l);
            // One `max_hold` rule for guards and locks (`idem_duration::check_hold`):
            // what passed the guard's check passes the lock's.
            l.validate()
                .map_err(|e| format!("{what} in the idem configuration: {e}"))?;
            Ok::<_, String>((p, l))
        };
        let (base, base_lock) = resolve(cfg.defaults, "the defaults")?;
        let mut scenes = HashMap::with_capacity(cfg.scenes.len());
        for (scene, s) in cfg.scenes {
            let level = resolve(s.or(cfg.defaults), &format!("scene `{scene}`"))?;
            scenes.insert(scene.into_boxed_str(), level);
        }
        Ok(Resolved {
            disabled: cfg.disabled,
            base,
            base_lock,
            scenes,
        })
    }

    /// The policy a guarded call in `scene` starts from.
    pub(crate) fn policy(&self, scene: &str) -> Policy {
        if !self.scenes.is_empty()
            && let Some((p, _)) = self.scenes.get(scene)
        {
            return p.clone();
        }
        self.base.clone()
    }

    /// The policy a lock in `scene` starts from.
    pub(crate) fn lock_policy(&self, scene: &str) -> LockPolicy {
        if !self.scenes.is_empty()
            && let Some((_, l)) = self.scenes.get(scene)
        {
            return *l;
        }
        self.base_lock
    }
}

/// `"30s"` (the macros' grammar) or a number of milliseconds.
fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Millis(u64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Millis(0)) => Err(serde::de::Error::custom(
            "a duration must be greater than zero",
        )),
        Some(Raw::Millis(ms)) => Ok(Some(Duration::from_millis(ms))),
        Some(Raw::Text(t)) => idem_duration::parse(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserializes_text_and_millis_and_refuses_unknown_fields() {
        let s: Settings = serde_json::from_str(r#"{"lease":"1m 30s","max_hold":60000}"#).unwrap();
        assert_eq!(s.lease, Some(Duration::from_secs(90)));
        assert_eq!(s.max_hold, Some(Duration::from_secs(60)));
        for bad in [
            r#"{"ttl":"0s"}"#,
            r#"{"ttl":0}"#,
            r#"{"ttl":"5 parsecs"}"#,
            r#"{"tll":"1h"}"#,
        ] {
            assert!(serde_json::from_str::<Settings>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scenes_fall_back_to_the_defaults_then_the_built_ins() {
        let cfg: Config =
            serde_json::from_str(r#"{"defaults":{"wait":"2s"},"scenes":{"a":{"ttl":"1h"}}}"#)
                .unwrap();
        let r = Resolved::new(cfg).unwrap();
        let a = r.policy("a");
        assert_eq!(a.ttl, Duration::from_secs(3_600));
        assert_eq!(a.wait, Some(Duration::from_secs(2)));
        assert_eq!(a.lease, crate::policy::DEFAULT_LEASE);
        let b = r.policy("b");
        assert_eq!(b.ttl, crate::policy::DEFAULT_TTL);
        assert_eq!(b.wait, Some(Duration::from_secs(2)));
        assert_eq!(r.lock_policy("a").wait, Some(Duration::from_secs(2)));
    }

    #[test]
    fn the_default_wait_is_five_seconds_or_the_lease() {
        let p = Policy::default();
        assert_eq!(p.wait_budget(), crate::policy::DEFAULT_WAIT);
        assert_eq!(crate::policy::DEFAULT_WAIT, Duration::from_secs(5));
        let short = Policy {
            lease: Duration::from_secs(2),
            ..Policy::default()
        };
        assert_eq!(short.wait_budget(), Duration::from_secs(2));
        assert_eq!(LockPolicy::default().wait_budget(), Duration::from_secs(5));
    }

    #[test]
    fn contradictions_name_the_scene() {
        let cfg: Config =
            serde_json::from_str(r#"{"scenes":{"pay":{"ttl":"10s","lease":"30s"}}}"#).unwrap();
        let e = Resolved::new(cfg).unwrap_err();
        assert!(
            e.contains("scene `pay`") && e.contains("shorter than ttl"),
            "{e}"
        );
    }
}
