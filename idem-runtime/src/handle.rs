//! The runtime handle: a store plus the settings every guarded call shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use tokio::sync::Notify;

use crate::backstop::{ConstraintCatalog, ConstraintDef, UniqueViolation};
use crate::breaker::Breaker;
use crate::error::Error;
use crate::key::{Key, KeyPart};
use crate::metrics::{Recorder, Stats, StoreOpKeys};
use crate::store::{RecordState, Store, StoreError, Warning};

/// Builds an [`Idem`] handle.
///
/// ```
/// # fn main() -> Result<(), idem_runtime::Error> {
/// use idem_runtime::{Idem, store::memory::MemoryStore};
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
    /// next one goes through after another cooldown.
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

    /// Builds the handle.
    pub fn build(self) -> Result<Idem, Error> {
        let store = self
            .store
            .ok_or_else(|| Error::Config("no store given to Idem::builder()".into()))?;
        if self.op_timeout.is_zero() {
            return Err(Error::Config("op_timeout must be greater than zero".into()));
        }
        let store_keys = StoreOpKeys::new(store.name());
        Ok(Idem {
            inner: Arc::new(Inner {
                store,
                namespace: self.namespace,
                op_timeout: self.op_timeout,
                breaker: Breaker::new(self.breaker_threshold, self.breaker_cooldown),
                recorder: Recorder::default(),
                store_keys,
                scenes: RwLock::new(HashMap::new()),
                backstops: RwLock::new(Vec::new()),
                catalog: self.catalog,
                catalog_cache: Mutex::new(HashMap::new()),
                inflight: Mutex::new(HashMap::new()),
            }),
        })
    }
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) namespace: String,
    pub(crate) op_timeout: Duration,
    pub(crate) breaker: Breaker,
    pub(crate) recorder: Recorder,
    pub(crate) store_keys: StoreOpKeys,
    /// scene -> the function that first used it (macro calls only).
    scenes: RwLock<HashMap<&'static str, &'static str>>,
    /// Backstop constraints seen, for `verify()`.
    backstops: RwLock<Vec<String>>,
    catalog: Option<Arc<dyn ConstraintCatalog>>,
    catalog_cache: Mutex<HashMap<String, Option<ConstraintDef>>>,
    /// Keys whose body runs in this process, so local waiters wake at once.
    pub(crate) inflight: Mutex<HashMap<String, Arc<Notify>>>,
}

/// The runtime handle: cheap to clone, shared by every guarded call.
#[derive(Clone)]
pub struct Idem {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Idem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idem")
            .field("store", &self.inner.store.name())
            .field("namespace", &self.inner.namespace)
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Idem> = OnceLock::new();

/// Installs the handle the macros use when no `handle = ...` is given.
/// Returns the handle back if one was installed already.
pub fn install(handle: Idem) -> Result<(), Idem> {
    GLOBAL.set(handle)
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
        }
    }

    /// The store's name.
    pub fn store_name(&self) -> &'static str {
        self.inner.store.name()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The namespace every key starts with.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// Renders a key the way `guard(scene, parts)` does, for `inspect`/`forget`.
    pub fn key(&self, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Key {
        Key::from_parts(&self.inner.namespace, scene, parts)
    }

    /// The monitoring figures so far: calls per outcome, interception rate,
    /// backstop hits and the most-intercepted keys.
    pub fn stats(&self) -> Stats {
        self.inner.recorder.snapshot()
    }

    /// Reads a key's record.
    pub async fn inspect(&self, key: &Key) -> Result<Option<RecordState>, Error> {
        self.inner
            .store
            .inspect(key.as_str())
            .await
            .map_err(|e| self.store_error(key.as_str(), e))
    }

    /// Deletes a key's record so the next call runs the body again. Fences keep
    /// increasing.
    pub async fn forget(&self, key: &Key) -> Result<bool, Error> {
        self.inner
            .store
            .forget(key.as_str())
            .await
            .map_err(|e| self.store_error(key.as_str(), e))
    }

    /// Deletes expired records (SQL stores; Redis expires natively).
    pub async fn purge_expired(&self) -> Result<u64, Error> {
        self.inner
            .store
            .purge_expired()
            .await
            .map_err(|e| self.store_error("*", e))
    }

    /// Start-up check: the store is reachable and safe (tables exist, Redis does
    /// not evict), and every backstop constraint used so far, plus `extra`, exists
    /// in the constraint catalog. Returns warnings; a missing piece is an error
    /// naming it.
    pub async fn verify(&self, extra_backstops: &[&str]) -> Result<Vec<Warning>, Error> {
        let warnings = self
            .inner
            .store
            .verify()
            .await
            .map_err(|e| Error::Verify(format!("store `{}`: {e}", self.store_name())))?;
        let mut names: Vec<String> = self
            .inner
            .backstops
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        names.extend(extra_backstops.iter().map(|s| (*s).to_owned()));
        names.sort();
        names.dedup();
        if !names.is_empty() {
            let Some(catalog) = &self.inner.catalog else {
                return Err(Error::Verify(format!(
                    "backstops {names:?} declared but no constraint catalog configured (IdemBuilder::constraints)"
                )));
            };
            let mut missing = Vec::new();
            for n in &names {
                match catalog.unique_constraint(n).await {
                    Ok(Some(_)) => {}
                    Ok(None) => missing.push(n.clone()),
                    Err(e) => return Err(Error::Verify(format!("looking up `{n}`: {e}"))),
                }
            }
            if !missing.is_empty() {
                return Err(Error::Verify(format!(
                    "unique constraint(s) not found: {}",
                    missing.join(", ")
                )));
            }
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
            StoreError::Unavailable(r) | StoreError::Config(r) => {
                let (reason, source) = r.into_parts();
                Error::StoreUnavailable {
                    key: key.to_owned(),
                    store: self.inner.store.name(),
                    reason,
                    source,
                }
            }
        }
    }

    /// Registers a macro function's scene; two functions may not share one.
    pub(crate) fn register_scene(
        &self,
        scene: &'static str,
        function: &'static str,
    ) -> Result<(), Error> {
        if let Some(f) = self
            .inner
            .scenes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(scene)
        {
            return check_scene(scene, f, function);
        }
        let mut w = self.inner.scenes.write().unwrap_or_else(|p| p.into_inner());
        let f = w.entry(scene).or_insert(function);
        check_scene(scene, f, function)
    }

    pub(crate) fn note_backstop(&self, name: &str) {
        if self
            .inner
            .backstops
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|n| n == name)
        {
            return;
        }
        self.inner
            .backstops
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.to_owned());
    }

    /// Does `v` violate the constraint called `name`?
    pub(crate) async fn violation_matches(&self, name: &str, v: &UniqueViolation) -> bool {
        if let Some(m) = v.names(name) {
            return m;
        }
        let Some(catalog) = &self.inner.catalog else {
            // The database did not name the constraint and we cannot look it up:
            // any unique violation in the body's first insert is taken as the backstop.
            tracing::debug!(
                constraint = name,
                "unnamed unique violation taken as backstop (no catalog)"
            );
            return true;
        };
        let cached = self
            .inner
            .catalog_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned();
        let def = match cached {
            Some(d) => d,
            None => match catalog.unique_constraint(name).await {
                Ok(d) => {
                    self.inner
                        .catalog_cache
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name.to_owned(), d.clone());
                    d
                }
                Err(e) => {
                    tracing::warn!(constraint = name, error = %e, "constraint lookup failed");
                    return false;
                }
            },
        };
        match def {
            Some(d) => {
                v.table.as_deref().is_none_or(|t| t == d.table) && {
                    let mut a = v.columns.clone();
                    let mut b = d.columns.clone();
                    a.sort();
                    b.sort();
                    a == b
                }
            }
            None => false,
        }
    }
}

fn check_scene(scene: &str, first: &'static str, second: &'static str) -> Result<(), Error> {
    if first == second {
        Ok(())
    } else {
        Err(Error::SceneConflict {
            scene: scene.to_owned(),
            first: first.to_owned(),
            second: second.to_owned(),
        })
    }
}
