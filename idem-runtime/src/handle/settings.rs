//! The builder methods of the run-time settings, and what a disabled guard
//! says about itself (a log line at `build()`, a `verify()` warning, and every
//! call counted under `outcome="unguarded"`).

use super::{Idem, IdemBuilder};
use crate::settings::{Config, Settings};

/// What `verify()` returns, and `build()` logs, for a disabled handle.
pub(crate) const DISABLED_WARNING: &str = "idem is disabled (IdemBuilder::disabled): \
     every guarded body runs unguarded, duplicates run again; counted as outcome=\"unguarded\"";

/// Logs the disabled switch once, at `build()`: loud (WARN) because a disabled
/// guard in production is a duplicate-payment bug waiting to happen.
pub(crate) fn warn_disabled(namespace: &str) {
    tracing::warn!(namespace, "{DISABLED_WARNING}");
}

impl IdemBuilder {
    /// The handle-level defaults of every guarded call and lock: what a call
    /// does not set in code and its scene's configuration does not set either
    /// (precedence in [`idem::settings`](crate::settings)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use idem::settings::Settings;
    /// let idem = idem::Idem::builder()
    ///     .store(idem::MemoryStore::new())
    ///     .defaults(Settings { wait: Some(Duration::from_secs(2)), ..Settings::default() })
    ///     .build()?;
    /// # Ok::<(), idem::Error>(())
    /// ```
    pub fn defaults(mut self, settings: Settings) -> Self {
        self.config.defaults = settings;
        self
    }

    /// Overrides of the defaults for one scene: the literal prefix of a key
    /// template (`"order-create"` for `"order-create:<id>"`), or the scene
    /// given to `idem.guard(scene, ..)` / `idem.lock(scene, ..)`. Given twice,
    /// the later wins.
    pub fn scene(mut self, scene: impl Into<String>, settings: Settings) -> Self {
        self.config.scenes.insert(scene.into(), settings);
        self
    }

    /// The whole run-time configuration at once (e.g. deserialized from the
    /// service's config file): replaces what [`defaults`](Self::defaults),
    /// [`scene`](Self::scene) and [`disabled`](Self::disabled) set before.
    /// Contradictory durations (a lease not shorter than the ttl, ...) make
    /// `build()` fail with `Error::Config` naming the scene.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Turns the guard off (default on): every guarded body runs, duplicates
    /// included, with no store traffic, and returns `How::Unguarded`. For tests
    /// and local runs without a store at hand, e.g.
    /// `.disabled(std::env::var_os("IDEM_DISABLED").is_some())`.
    ///
    /// A disabled guard is never silent: `build()` logs a WARN line,
    /// [`Idem::verify`] returns a warning, and every call is counted under
    /// `idem_calls_total{outcome="unguarded"}` (`stats().count("unguarded")`),
    /// so an alert on that series catches it in production. It covers the
    /// guard (`#[idempotent]`, `idem.guard`, the HTTP layer) and the
    /// transactional guard; locks, tokens and the SQL techniques are not
    /// affected (they are correctness, not deduplication).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), idem::Error> {
    /// let idem = idem::Idem::builder()
    ///     .store(idem::MemoryStore::new())
    ///     .disabled(true)
    ///     .build()?;
    /// for _ in 0..2 {
    ///     let out = idem.guard("pay", &[&1u64]).run(|| async { Ok::<_, idem::Error>(1) }).await?;
    ///     assert_eq!(out.how(), idem::How::Unguarded);
    /// }
    /// assert_eq!(idem.stats().count("unguarded"), 2);
    /// let warnings = idem.verify(&[]).await?;
    /// assert!(warnings.iter().any(|w| w.to_string().starts_with("idem is disabled")));
    /// # Ok(()) }
    /// ```
    pub fn disabled(mut self, disabled: bool) -> Self {
        self.config.disabled = disabled;
        self
    }
}

impl Idem {
    /// Is the guard turned off ([`IdemBuilder::disabled`])?
    pub fn is_disabled(&self) -> bool {
        self.inner.settings.disabled
    }

    /// Seeds the handle's retry and polling jitter (by default from the process
    /// id), for deterministic simulations that run several "processes" in one
    /// test process and must replay a seed in another one. Not part of the API.
    #[doc(hidden)]
    pub fn __seed_jitter(&self, seed: u64) {
        self.inner.exec.jitter.reseed(seed);
    }

    /// The namespace, escaped once for every key the handle renders or checks.
    pub(crate) fn key_namespace(&self) -> &crate::key::Namespace {
        &self.inner.namespace
    }

    /// The resolved settings (what a call in a scene starts from).
    pub(crate) fn settings(&self) -> &crate::settings::Resolved {
        &self.inner.settings
    }
}
