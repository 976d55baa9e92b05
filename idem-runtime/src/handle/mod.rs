//! The runtime handle: a store plus the settings every guarded call shares.

mod backstops;
mod extensions;
mod settings;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::backstop::{
    Backstops, ConstraintCatalog, Detection, UniqueViolation, ViolationDetector,
};
use crate::error::Error;
use crate::exec::{Breaker, Exec};
use crate::key::{Key, KeyPart};
use crate::observe::{Op, Recorder, Stats};
use crate::policy::within_bounds;
use crate::scene::SceneRegistry;
use crate::store::{RecordState, Store, StoreError, Warning};

/// Builds an [`Idem`] handle.
///
/// ```
/// # fn main() -> Result<(), idem::Error> {
/// use idem::{Idem, store::memory::MemoryStore};
/// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
/// # Ok(()) }
/// ```
#[must_use]
pub struct IdemBuilder {
    store: Option<Arc<dyn Store>>,
    namespace: String,
    op_timeout: Duration,
    breaker_threshold: u32,
    breaker_cooldown: Duration,
    catalog: Option<Arc<dyn ConstraintCatalog>>,
    /// The techniques' per-handle state (`extensions.rs`).
    pub(crate) extensions: extensions::Extensions,
    detection: Detection,
    raw_keys: bool,
    /// Run-time settings and the off switch (`settings/builder.rs`).
    pub(crate) config: crate::settings::Config,
    /// Backstops `verify()` checks beside the annotated functions'
    /// (`backstop/declared.rs`).
    pub(crate) backstop_decls: crate::backstop::declared::HandleDecls,
}

impl std::fmt::Debug for IdemBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdemBuilder")
            .field("store", &self.store.as_ref().map(|s| s.name()))
            .field("namespace", &self.namespace)
            .field("op_timeout", &self.op_timeout)
            .finish_non_exhaustive()
    }
}

impl IdemBuilder {
    /// The record store (required).
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// A shared record store.
    pub fn shared_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Prefix of every key: the service or channel. Keep it stable across deploys.
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = ns.into();
        self
    }

    /// Budget for one store operation including its retries (default 1 s).
    /// Past it the call fails closed with `StoreUnavailable`. A claim gives up
    /// after three quick attempts; operations on a claim the call holds (renew,
    /// complete, release) retry for the whole budget, so a short blip neither
    /// costs a running body its lease nor a finished body its stored result.
    pub fn op_timeout(mut self, t: Duration) -> Self {
        self.op_timeout = t;
        self
    }

    /// Consecutive failures before the circuit breaker opens (default 5) and how
    /// long it stays open (default 2 s). An open breaker refuses new claims at
    /// once; it never refuses the renew, complete or release of a claim already
    /// held. After the cooldown one probe goes through; if it never reports, the
    /// next one goes through after another cooldown. Failures while it is open,
    /// and failures of operations on held claims, never extend the cooldown, and
    /// any answer from the store closes it: a healed store is used again at most
    /// one cooldown after the heal.
    pub fn circuit_breaker(mut self, threshold: u32, cooldown: Duration) -> Self {
        self.breaker_threshold = threshold;
        self.breaker_cooldown = cooldown;
        self
    }

    /// Where backstop constraints are looked up: used by `verify()` and to name
    /// the index of a SQLite unique violation.
    pub fn constraints(mut self, catalog: impl ConstraintCatalog) -> Self {
        self.catalog = Some(Arc::new(catalog));
        self
    }

    /// Adds a unique-violation detector, asked before the built-in detection for
    /// every link of a business error's chain (see
    /// [`ViolationDetector`](crate::backstop::ViolationDetector)). `verify()`
    /// checks that the detection as a whole sees each declared backstop.
    pub fn violation_detector(mut self, detector: impl ViolationDetector) -> Self {
        self.detection.push(Arc::new(detector));
        self
    }

    /// Turns the built-in detection (idem's sqlx types, then the message and
    /// SQLSTATE text every sqlx version prints) on or off (default on). With it
    /// off only the [`violation_detector`](Self::violation_detector)s run, and
    /// `verify()` fails if they cannot see a declared backstop.
    pub fn builtin_violation_detection(mut self, on: bool) -> Self {
        self.detection.set_builtin(on);
        self
    }

    /// Records raw keys in the `idem` spans instead of their hashes (default
    /// off: keys are request data). Log lines outside the span keep the hash;
    /// `idem::observe::key_hash` maps a key to it.
    pub fn log_raw_keys(mut self, on: bool) -> Self {
        self.raw_keys = on;
        self
    }

    /// Builds the handle. Registers the metric descriptions with the recorder
    /// installed now (install it before building the handle).
    pub fn build(self) -> Result<Idem, Error> {
        let store = self
            .store
            .ok_or_else(|| Error::Config("no store given to Idem::builder()".into()))?;
        if self.op_timeout.is_zero() {
            return Err(Error::Config("op_timeout must be greater than zero".into()));
        }
        within_bounds("op_timeout", self.op_timeout).map_err(Error::Config)?;
        within_bounds("the circuit breaker cooldown", self.breaker_cooldown)
            .map_err(Error::Config)?;
        let settings = crate::settings::Resolved::new(self.config).map_err(Error::Config)?;
        if settings.disabled {
            settings::warn_disabled(&self.namespace);
        }
        let breaker = Breaker::new(self.breaker_threshold, self.breaker_cooldown);
        crate::observe::describe();
        let recorder = Recorder::default();
        recorder.set_raw_keys(self.raw_keys);
        Ok(Idem {
            inner: Arc::new(Inner {
                exec: Exec::new(store, self.op_timeout, breaker),
                namespace: crate::key::Namespace::new(&self.namespace),
                recorder,
                scenes: SceneRegistry::default(),
                backstops: Backstops::declared(self.catalog, self.detection, self.backstop_decls),
                settings,
                extensions: self.extensions,
            }),
        })
    }
}

pub(crate) struct Inner {
    /// The store and the machinery every operation runs through.
    pub(crate) exec: Arc<Exec>,
    pub(crate) namespace: crate::key::Namespace,
    pub(crate) recorder: Recorder,
    /// Which function renders keys under which scene.
    scenes: SceneRegistry,
    /// Backstop constraints seen (for `verify()`) and the catalog that names them.
    backstops: Backstops,
    /// The configured defaults per scene, and the off switch.
    pub(crate) settings: crate::settings::Resolved,
    /// The techniques' per-handle state, filled by their builder methods.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub(crate) extensions: extensions::Extensions,
}

/// The runtime handle: cheap to clone, shared by every guarded call.
#[derive(Clone)]
pub struct Idem {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Idem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idem")
            .field("store", &self.inner.exec.store.name())
            .field("namespace", &self.inner.namespace.raw())
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Idem> = OnceLock::new();

/// Installs the handle the macros use when no `handle = ...` is given.
/// Returns the handle back if one was installed already.
pub fn install(handle: Idem) -> Result<(), Idem> {
    GLOBAL.set(handle)?;
    if let Some(g) = GLOBAL.get() {
        crate::observe::install_fallback(&g.inner.recorder, g.namespace());
    }
    Ok(())
}

/// The recorder and namespace a call counts under: `handle`'s, else the
/// installed global's, else a process-wide recorder and no namespace (the one
/// fallback rule, `observe::counted_under`).
#[cfg_attr(not(feature = "sql"), allow(dead_code))]
pub(crate) fn recorder_for(handle: Option<&Idem>) -> (&Recorder, &str) {
    crate::observe::counted_under(handle.map(|h| (&h.inner.recorder, h.namespace())))
}

/// The installed handle, or `Error::NotInstalled`.
pub fn global() -> Result<&'static Idem, Error> {
    GLOBAL.get().ok_or(Error::NotInstalled)
}

impl Idem {
    /// Starts a builder with defaults: 1 s operation timeout, breaker after 5
    /// failures for 2 s, no namespace.
    pub fn builder() -> IdemBuilder {
        IdemBuilder {
            store: None,
            namespace: String::new(),
            op_timeout: Duration::from_secs(1),
            breaker_threshold: 5,
            breaker_cooldown: Duration::from_secs(2),
            catalog: None,
            extensions: Default::default(),
            detection: Detection::default(),
            raw_keys: false,
            config: crate::settings::Config::default(),
            backstop_decls: Default::default(),
        }
    }

    /// The store's name.
    pub fn store_name(&self) -> &'static str {
        self.inner.exec.store.name()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.exec.store
    }

    /// The namespace every key starts with.
    pub fn namespace(&self) -> &str {
        self.inner.namespace.raw()
    }

    /// Renders a key the way `guard(scene, parts)` does, for `inspect`/`forget`.
    /// The scene is escaped like a part; for a scene without `:` this is also the
    /// key of an `#[idempotent]` function with template `scene:<p1>:<p2>…`.
    pub fn key(&self, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Key {
        Key::from_parts_in(&self.inner.namespace, scene, parts)
    }

    /// The monitoring figures so far: calls per outcome, interception rate,
    /// backstop hits and the most-intercepted keys.
    pub fn stats(&self) -> Stats {
        self.inner.recorder.snapshot()
    }

    /// Reads a key's record.
    pub async fn inspect(&self, key: &Key) -> Result<Option<RecordState>, Error> {
        let (exec, k) = (&self.inner.exec, key.as_str());
        exec.op(Op::Inspect, k, || exec.store.inspect(k))
            .await
            .map_err(|e| self.store_error(k, e))
    }

    /// Deletes a key's record so the next call runs the body again. Fences keep
    /// increasing.
    pub async fn forget(&self, key: &Key) -> Result<bool, Error> {
        let (exec, k) = (&self.inner.exec, key.as_str());
        exec.op(Op::Forget, k, || exec.store.forget(k))
            .await
            .map_err(|e| self.store_error(k, e))
    }

    /// Deletes expired records (SQL stores; Redis expires natively).
    pub async fn purge_expired(&self) -> Result<u64, Error> {
        self.inner
            .exec
            .store
            .purge_expired()
            .await
            .map_err(|e| self.store_error("*", e))
    }

    /// Start-up check: the store is reachable and safe (tables exist, Redis does
    /// not evict), and the backstops of the `#[idempotent]` functions this handle
    /// serves (without `handle = …`, or under [`IdemBuilder::functions`]), those
    /// of [`IdemBuilder::backstop`], of calls so far and `extra` exist in the
    /// catalog: a missing one is `Error::Verify` naming it, who declared it and
    /// the closest name; other `handle = …` functions' are warnings saying how
    /// to attribute them, returned with the rest ([`IdemBuilder::disabled`]).
    pub async fn verify(&self, extra_backstops: &[&str]) -> Result<Vec<Warning>, Error> {
        let mut warnings = self
            .inner
            .exec
            .store
            .verify()
            .await
            .map_err(|e| Error::Verify(format!("store `{}`: {e}", self.store_name())))?;
        let (backstops, declared) = (&self.inner.backstops, crate::backstop::declared::linked());
        let found = backstops.verify(extra_backstops, &declared).await?;
        warnings.extend(found.into_iter().map(Warning));
        if self.is_disabled() {
            warnings.push(Warning(settings::DISABLED_WARNING.into()));
        }
        Ok(warnings)
    }

    pub(crate) fn store_error(&self, key: &str, e: StoreError) -> Error {
        match e {
            StoreError::Codec(r) => Error::Codec {
                key: key.to_owned(),
                detail: r.into_parts().0,
            },
            // The caller's input: not the store's fault, and never retryable.
            StoreError::Input(r) => Error::InvalidKey {
                key: key.to_owned(),
                reason: r.into_parts().0,
            },
            StoreError::Overloaded(r) => Error::Overloaded {
                key: key.to_owned(),
                store: self.inner.exec.store.name(),
                reason: r.into_parts().0,
            },
            StoreError::Unavailable(r) | StoreError::Config(r) => {
                let (reason, source) = r.into_parts();
                Error::StoreUnavailable {
                    key: key.to_owned(),
                    store: self.inner.exec.store.name(),
                    reason,
                    source,
                }
            }
        }
    }

    /// The scene registry: functions whose keys could collide are refused.
    pub(crate) fn scenes(&self) -> &SceneRegistry {
        &self.inner.scenes
    }

    /// Where the SQL helpers count calls made with this handle.
    #[cfg(feature = "sql")]
    pub(crate) fn observer(&self) -> crate::observe::Observer<'_> {
        crate::observe::Observer::of(&self.inner.recorder, self.inner.namespace.raw())
    }

    /// Remembers a call's backstop constraint for `verify()`.
    pub(crate) fn note_backstop(&self, name: &str) {
        self.inner.backstops.note(name);
    }

    /// The first unique violation in `err`'s chain, as this handle detects them.
    pub(crate) fn find_violation(
        &self,
        err: &(dyn std::error::Error + 'static),
    ) -> Option<UniqueViolation> {
        self.inner.backstops.find(err)
    }

    /// Does `v` violate the constraint called `name`?
    pub(crate) async fn violation_matches(&self, name: &str, v: &UniqueViolation) -> bool {
        self.inner.backstops.matches(name, v).await
    }

    /// A violation under a backstop name the database does not have: the
    /// text of the typed error the call returns (see `Backstops::misdeclared`).
    pub(crate) async fn misdeclared_backstop(
        &self,
        name: &str,
        v: &UniqueViolation,
    ) -> Option<String> {
        self.inner.backstops.misdeclared(name, v).await
    }
}
