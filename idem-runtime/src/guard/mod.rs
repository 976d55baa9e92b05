//! The non-macro API: `idem.guard(scene, parts)…run(body)` (or `run_fenced` for
//! a body that reads its fence). It configures a call and hands it to the
//! engine, which the `#[idempotent]` expansion also calls.
//!
//! - `engine`: the protocol (claim, wait or reject, run under the lease watchdog);
//! - `finish`: after the body (complete, terminal errors, backstop, release);
//! - `degraded`: the store is down, the body runs under the backstop (and, with
//!   `degrade_local`, under an in-process claim per key);
//! - `replay`: decoding stored records and the encodings the guard stores.
//!
//! The store operations, the lease watchdog and the detached finish are the
//! execution layer's (`crate::exec`); this module only decides what to do.

use std::future::Future;
use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};

use crate::error::Error;
use crate::fingerprint::{Fingerprint, FingerprintBuilder};
use crate::handle::Idem;
use crate::hooks::{Hooks, OnConflict};
use crate::key::{Key, KeyPart};
use crate::outcome::{Fence, Outcome};
use crate::policy::{Concurrency, Policy};

mod degraded;
pub(crate) mod engine;
mod finish;
pub(crate) mod replay;

pub(crate) use engine::Call;

/// A guarded call being configured: `idem.guard(scene, parts)...run(body)`.
///
/// ```
/// # use idem::{Idem, store::memory::MemoryStore};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), idem::Error> {
/// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
/// for _ in 0..3 {
///     let out = idem
///         .guard("order-create", &[&7u64, &"req-1"])
///         .run(|| async { Ok::<_, idem::Error>(String::from("order-7")) })
///         .await?;
///     println!("{} replay={}", out.value(), out.is_replay());
/// }
/// # Ok(()) }
/// ```
#[must_use = "a guard does nothing until `.run(...)` is awaited"]
#[derive(Debug)]
pub struct Guard<'h> {
    pub(crate) idem: &'h Idem,
    pub(crate) key: Key,
    pub(crate) policy: Policy,
    pub(crate) fingerprint: Result<Fingerprint, String>,
    /// The `technique` label its outcome is counted under.
    pub(crate) technique: crate::observe::Technique,
}

impl Idem {
    /// Starts a guarded call keyed by `scene` and the `parts`, all escaped.
    /// The scene is registered at `run`: a macro function whose scene equals it
    /// or starts with it as a `:` segment makes the later of the two fail with
    /// `Error::SceneConflict`.
    pub fn guard(&self, scene: &str, parts: &[&(dyn KeyPart + Sync)]) -> Guard<'_> {
        // The configuration names scenes as written, not as escaped in keys.
        self.start_guard(self.key(scene, parts), self.settings().policy(scene))
    }

    /// Starts a guarded call with a key rendered by [`Idem::key`] (another
    /// namespace's key is refused at `run` with `Error::Config`). Same scene
    /// rules as [`Idem::guard`].
    pub fn guard_key(&self, key: Key) -> Guard<'_> {
        let policy = self.settings().policy(&key.scene_as_written());
        self.start_guard(key, policy)
    }

    /// A guard starting from `policy` (the configured settings of its scene).
    fn start_guard(&self, key: Key, policy: Policy) -> Guard<'_> {
        Guard {
            idem: self,
            policy,
            key,
            fingerprint: Ok(Fingerprint::NONE),
            technique: crate::observe::Technique::Idempotent,
        }
    }
}

impl Guard<'_> {
    /// The rendered key.
    pub fn key(&self) -> &Key {
        &self.key
    }
    /// Result replay window (default 24 h). Every setting written here wins
    /// over the handle's configuration (see [`crate::settings`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.policy.ttl = ttl;
        self
    }
    /// Claim life without renewal (default 30 s; must be shorter than ttl).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.policy.lease = lease;
        self
    }
    /// How long a concurrent duplicate waits (default 5 s, or the lease if shorter:
    /// [`DEFAULT_WAIT`](crate::policy::DEFAULT_WAIT)).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.policy.wait = Some(wait);
        self
    }
    /// Wait for, or reject, concurrent duplicates.
    pub fn concurrent(mut self, c: Concurrency) -> Self {
        self.policy.concurrent = c;
        self
    }
    /// Upper bound on lease renewal for a hung body (default 20 × lease).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.policy.max_hold = Some(d);
        self
    }
    /// Version tag stored with the result.
    pub fn version(mut self, v: u32) -> Self {
        self.policy.version = v;
        self
    }
    /// The request payload: a retry with a different payload gets `PayloadMismatch`.
    pub fn fingerprint<P: Serialize + ?Sized>(mut self, payload: &P) -> Self {
        self.fingerprint = FingerprintBuilder::new().add(payload).finish();
        self
    }
    /// The business unique constraint backing this call.
    pub fn backstop(mut self, constraint: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        self.policy.backstop = Some(constraint.into());
        self
    }
    /// Run the body when the store is unavailable, relying on the backstop.
    /// Each call runs its body: during an outage a key called N times runs N
    /// bodies, and the constraint stops all but one (see the README's cost table).
    pub fn degrade_to_backstop(mut self) -> Self {
        self.policy.degrade = true;
        self
    }
    /// [`degrade_to_backstop`](Self::degrade_to_backstop), holding an in-process
    /// claim per key while the store is down: same-process duplicates wait (up to
    /// `wait`; `concurrent = Reject` refuses them) for the body that runs and
    /// receive its value (`How::Waited`, not stored) instead of each running into
    /// the constraint. Other processes are still stopped by the constraint only.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use idem::{Error, FaultyStore, Hooks, How, Idem, MemoryStore, std_error};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Error> {
    /// let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    /// let idem = Idem::builder().shared_store(store.clone()).build()?;
    /// store.set_unavailable(true); // an outage
    /// let call = || {
    ///     idem.guard("order-create", &[&"o-1"])
    ///         .backstop("uk_order_no") // the body's insert is the first effect
    ///         .degrade_locally()
    ///         .run_with(Hooks::new().detect(std_error), || async {
    ///             tokio::time::sleep(std::time::Duration::from_millis(50)).await; // the insert
    ///             Ok::<_, Error>(7)
    ///         })
    /// };
    /// let (a, b) = tokio::join!(call(), call());
    /// let mut hows = [a?.how(), b?.how()];
    /// hows.sort_by_key(|h| h.as_str());
    /// assert_eq!(hows, [How::Degraded, How::Waited]); // one body ran
    /// assert_eq!(idem.stats().count("degraded"), 1);
    /// # Ok(()) }
    /// ```
    pub fn degrade_locally(mut self) -> Self {
        self.policy.degrade = true;
        self.policy.degrade_local = true;
        self
    }
    /// Counts the call under another technique label (the HTTP layer's `http`).
    #[cfg(feature = "axum")]
    pub(crate) fn technique(mut self, technique: crate::observe::Technique) -> Self {
        self.technique = technique;
        self
    }
    /// Replaces all settings at once.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Runs `body` at most once for this key (see the crate docs for the rules).
    ///
    /// The body gets no fence, so the store may claim with its cheapest command
    /// (Redis: one native `SET … NX PX … GET` instead of a script that reads the
    /// server clock), as `#[idempotent]` does for a function without an
    /// `idem::Fence` parameter. Every other rule holds: the claim is
    /// owner-checked, and [`run_fenced`](Self::run_fenced) calls of the same key
    /// still get fences larger than every earlier one.
    pub fn run<T, E, B, Fut>(self, body: B) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        B: FnOnce() -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.run_with(Hooks::new(), body)
    }

    /// [`run`](Self::run) with typed hooks: backstop detection, `on_conflict`,
    /// terminal errors.
    pub fn run_with<T, E, C, B, Fut>(
        self,
        hooks: Hooks<E, C>,
        body: B,
    ) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce() -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.drive(Register::Scene, false, hooks, move |_| body())
    }

    /// Runs `body` at most once for this key, handing it the claim's fence: a
    /// value larger than the fence of every earlier claim of the key, for writes
    /// that must refuse a stale holder (see [`crate::lock::fenced`]). On Redis
    /// the claim is a script reading the server clock (about twice a native
    /// command's server cost), so a body that ignores its fence should use
    /// [`run`](Self::run).
    ///
    /// ```
    /// # use idem::{Idem, store::memory::MemoryStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), idem::Error> {
    /// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
    /// let out = idem
    ///     .guard("stock-deduct", &[&"sku-1", &"req-1"])
    ///     .run_fenced(|fence| async move {
    ///         // UPDATE stock SET n = n - 1, fence = $fence WHERE sku = $1 AND fence <= $fence
    ///         Ok::<_, idem::Error>(fence.get())
    ///     })
    ///     .await?;
    /// assert!(out.fence().is_valid());
    /// assert_eq!(*out.value(), out.fence().get());
    /// # Ok(()) }
    /// ```
    pub fn run_fenced<T, E, B, Fut>(self, body: B) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.run_fenced_with(Hooks::new(), body)
    }

    /// [`run_fenced`](Self::run_fenced) with typed hooks.
    pub fn run_fenced_with<T, E, C, B, Fut>(
        self,
        hooks: Hooks<E, C>,
        body: B,
    ) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        self.drive(Register::Scene, true, hooks, body)
    }

    /// Every run's one async layer (see [`drive_to`](Self::drive_to)).
    fn drive<T, E, C, B, Fut>(
        self,
        register: Register,
        fenced: bool,
        hooks: Hooks<E, C>,
        body: B,
    ) -> impl Future<Output = Result<Outcome<T>, E>>
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        Guard::drive_to(
            Ok(self),
            register,
            fenced,
            hooks,
            body,
            std::convert::identity,
        )
    }

    /// Every run's one async layer, the macro's too: registers the scene as a
    /// non-macro one when asked, then the engine, then `finish` turns the
    /// result into what the caller returns. `guard` is what the caller's
    /// preamble made of the call (its error is finished without any store
    /// traffic). The public runs and the macro's `run` are plain functions
    /// forwarding here: each `async fn` layer stored its callee's whole future
    /// and copied it once more on every call (issue 29's profile; issue 46's
    /// for the macro, whose own layer and result mapping cost a copy more).
    pub(crate) async fn drive_to<T, E, C, B, Fut, Out>(
        guard: Result<Self, Error>,
        register: Register,
        fenced: bool,
        hooks: Hooks<E, C>,
        body: B,
        finish: impl FnOnce(Result<Outcome<T>, E>) -> Out,
    ) -> Out
    where
        T: Serialize + DeserializeOwned + Send,
        E: From<Error> + Send,
        C: OnConflict<T, E>,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        let Guard {
            idem,
            key,
            policy,
            fingerprint,
            technique,
        } = match guard {
            Ok(g) => g,
            Err(e) => return finish(Err(e.into())),
        };
        if register == Register::Scene
            && let Err(e) = idem.scenes().register_key(&key, idem.key_namespace())
        {
            return finish(Err(e.into()));
        }
        let call = Call {
            idem,
            key: &key,
            policy: &policy,
            technique,
            fenced,
        };
        finish(call.execute(fingerprint, hooks, body).await)
    }
}

/// Whether [`Guard::drive_to`] registers the key's scene as a non-macro one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Register {
    Scene,
    /// A macro call: its site registered the scene under its own identity.
    Done,
}
