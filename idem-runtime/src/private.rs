//! The only surface generated code touches. Not public API: names here may change
//! in any release, and the macros are updated with them.
//!
//! An `#[idempotent]` function expands to a static [`Spec`], a [`KeyBuf`] chain
//! rendering the key from the parameters, and one [`Guarded`] call that hands the
//! body to the same engine as the non-macro builder.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};

pub use crate::fingerprint::FingerprintBuilder;
pub use crate::hooks::{DetectFn, Hooks, NoConflict, OnConflict, Terminal};
pub use crate::policy::Concurrency;

use crate::error::Error;
use crate::fence::Fence;
use crate::fingerprint::Fingerprint;
use crate::guard::Call;
use crate::handle::{Idem, global};
use crate::key::{Key, KeyPart, KeyWriter};
use crate::policy::Policy;
use crate::scene::Owner;

/// The compile-time description of one guarded function.
#[derive(Debug)]
pub struct Spec {
    /// `module_path!()::name`, for diagnostics. The scene registry identifies
    /// the function by this static's address: two impls' same-named methods
    /// share a name.
    pub function: &'static str,
    /// The key template as written.
    pub template: &'static str,
    /// The literal scene prefix of the template (before the first placeholder,
    /// without the trailing `:`).
    pub scene: &'static str,
    /// Result replay window.
    pub ttl: Duration,
    /// Claim life without renewal.
    pub lease: Duration,
    /// How long a concurrent duplicate waits (`None`: the lease).
    pub wait: Option<Duration>,
    /// Renewal bound for a hung body (`None`: 20 × lease).
    pub max_hold: Option<Duration>,
    /// Wait for or reject concurrent duplicates.
    pub concurrent: Concurrency,
    /// Stored with the result.
    pub version: u32,
    /// The backstop constraint.
    pub backstop: Option<&'static str>,
    /// `degrade = "backstop"`.
    pub degrade: bool,
}

impl Spec {
    /// The defaults the macro leaves out: `..Spec::DEFAULT` keeps the expansion
    /// to the options actually written. `function`, `template` and `scene` are
    /// always given.
    pub const DEFAULT: Spec = Spec {
        function: "",
        template: "",
        scene: "",
        ttl: crate::policy::DEFAULT_TTL,
        lease: crate::policy::DEFAULT_LEASE,
        wait: None,
        max_hold: None,
        concurrent: Concurrency::Wait,
        version: 1,
        backstop: None,
        degrade: false,
    };

    fn policy(&self) -> Policy {
        Policy {
            ttl: self.ttl,
            lease: self.lease,
            wait: self.wait,
            max_hold: self.max_hold,
            concurrent: self.concurrent,
            version: self.version,
            degrade: self.degrade,
            backstop: self.backstop.map(std::borrow::Cow::Borrowed),
        }
    }
}

/// Renders the key from template pieces straight into one buffer
/// ([`KeyWriter`], shared with `Key::from_parts`); the namespace is put in front
/// once the handle is known, at `run`.
#[derive(Debug)]
pub struct KeyBuf(KeyWriter);

impl KeyBuf {
    /// Starts a key for `spec`.
    pub fn new(spec: &'static Spec) -> Self {
        KeyBuf(KeyWriter::with_capacity(spec.template.len() + 32))
    }

    /// Appends literal template text.
    pub fn lit(mut self, s: &'static str) -> Self {
        self.0.literal(s);
        self
    }

    /// Appends one parameter, escaped.
    pub fn arg<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.0.part(part);
        self
    }

    /// Ends the key.
    pub fn finish(self) -> KeyBuf {
        self
    }

    pub(crate) fn into_key(self, namespace: &str) -> Key {
        self.0.finish(namespace)
    }
}

/// Carries the claim's fence into a body that declared an `idem::Fence` parameter.
#[derive(Debug, Default)]
pub struct FenceCell(AtomicU64);

impl FenceCell {
    /// An empty cell.
    pub const fn new() -> Self {
        FenceCell(AtomicU64::new(0))
    }
    /// The fence of the current claim (`Fence::NONE` before the claim).
    pub fn get(&self) -> Fence {
        Fence::new(self.0.load(Ordering::Acquire))
    }
    /// What the body's `idem::Fence` parameter is rebound to: the claim's fence
    /// (the caller passes `Fence::NONE`; the argument is taken so it counts as used).
    pub fn take(&self, _passed: Fence) -> Fence {
        self.get()
    }
    fn set(&self, f: Fence) {
        self.0.store(f.get(), Ordering::Release);
    }
}

/// One guarded call as generated code builds it, typed by the function's
/// declared return type `R` (`Result<T, E>` or an alias of it).
pub struct Guarded<'h, R: IsResult, C = NoConflict> {
    spec: &'static Spec,
    key: KeyBuf,
    handle: Option<&'h Idem>,
    fingerprint: Result<Fingerprint, String>,
    hooks: Hooks<R::Err, C>,
    fence: Option<&'h FenceCell>,
}

impl<R: IsResult, C> std::fmt::Debug for Guarded<'_, R, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("function", &self.spec.function)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<'h, R: IsResult> Guarded<'h, R, NoConflict> {
    /// Starts the call.
    pub fn new(spec: &'static Spec, key: KeyBuf) -> Self {
        Guarded {
            spec,
            key,
            handle: None,
            fingerprint: Ok(Fingerprint::NONE),
            hooks: Hooks::new(),
            fence: None,
        }
    }
}

impl<'h, R: IsResult, C> Guarded<'h, R, C> {
    /// Uses this handle instead of the installed global.
    pub fn handle(mut self, idem: &'h Idem) -> Self {
        self.handle = Some(idem);
        self
    }

    /// The request fingerprint.
    pub fn fingerprint(mut self, fp: &FingerprintBuilder) -> Self {
        self.fingerprint = fp.finish();
        self
    }

    /// The request fingerprint, built in place so the hasher is not kept alive
    /// across the body's awaits.
    pub fn fingerprint_with(mut self, add: impl FnOnce(&mut FingerprintBuilder)) -> Self {
        let mut fp = FingerprintBuilder::new();
        add(&mut fp);
        self.fingerprint = fp.finish();
        self
    }

    /// Where a backstop violation is searched for in `E`.
    pub fn detect(mut self, detect: DetectFn<R::Err>) -> Self {
        self.hooks = self.hooks.detect(detect);
        self
    }

    /// Terminal errors (stored and replayed).
    pub fn terminal(mut self, is_terminal: fn(&R::Err) -> bool) -> Self
    where
        R::Err: TerminalError,
    {
        self.hooks = self.hooks.terminal(Terminal::new(is_terminal));
        self
    }

    /// The lookup run after a backstop violation.
    pub fn on_conflict<C2>(self, on_conflict: C2) -> Guarded<'h, R, C2> {
        Guarded {
            spec: self.spec,
            key: self.key,
            handle: self.handle,
            fingerprint: self.fingerprint,
            hooks: self.hooks.on_conflict(on_conflict),
            fence: self.fence,
        }
    }

    /// The cell the body reads its `idem::Fence` parameter from.
    pub fn fence(mut self, cell: &'h FenceCell) -> Self {
        self.fence = Some(cell);
        self
    }

    /// Runs the body under the guard and returns what the function returns.
    ///
    /// The one `Returns` bound is checked against the type the macro names in
    /// `Guarded::<R>::new` (the user's return type), so a result that cannot be
    /// stored is one error there.
    pub async fn run<Fut>(self, body: Fut) -> R
    where
        R: Returns,
        C: OnConflict<R::Ok, R::Err>,
        Fut: Future<Output = R> + Send,
    {
        let idem = match self.handle {
            Some(h) => h,
            None => match global() {
                Ok(h) => h,
                Err(e) => return R::from_result(Err(e.into())),
            },
        };
        let owner = Owner::of(self.spec, self.spec.function);
        if let Err(e) = idem.scenes().register(self.spec.scene, owner) {
            return R::from_result(Err(e.into()));
        }
        let key = self.key.into_key(idem.namespace());
        let policy = self.spec.policy();
        let cell = self.fence;
        let call = Call {
            idem,
            key: &key,
            policy: &policy,
            technique: crate::observe::Technique::Idempotent,
        };
        let result = call
            .execute(self.fingerprint, self.hooks, move |fence| {
                if let Some(c) = cell {
                    c.set(fence);
                }
                async move { body.await.into_result() }
            })
            .await
            .map(crate::outcome::Outcome::into_inner);
        R::from_result(result)
    }
}

/// What an `#[idempotent]` function may return: `Result<T, E>` whose `Ok` value
/// can be stored and replayed and whose error can carry an `idem::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of an `#[idempotent]` function",
    label = "expected `Result<T, E>`",
    note = "the function must return `Result<T, E>` with `T: Serialize + DeserializeOwned + Send` (it is stored and replayed) and `E: From<idem::Error> + Send`"
)]
pub trait Returns: IsResult<Ok: Storable, Err: IdemErrorInto> {}

impl<T: Storable, E: IdemErrorInto> Returns for Result<T, E> {}

/// A result value that can be stored and replayed. One bound, so a type missing
/// several of them is one error at the user's return type (`do_not_recommend`
/// keeps rustc from listing each missing trait separately).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as the result of an `#[idempotent]` function",
    label = "the `Ok` type must implement `Serialize`, `DeserializeOwned` and `Send`",
    note = "the result is stored and replayed to repeated calls: derive `serde::Serialize` and `serde::Deserialize` for `{Self}`"
)]
pub trait Storable: Serialize + DeserializeOwned + Send {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned + Send> Storable for T {}

/// An error type whose terminal errors can be stored and replayed (`terminal = ..`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as a terminal error",
    label = "`terminal` stores errors, so the `Err` type must implement `Serialize` and `DeserializeOwned`",
    note = "derive `serde::Serialize` and `serde::Deserialize` for `{Self}`, or drop `terminal`"
)]
pub trait TerminalError: Serialize + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<E: Serialize + DeserializeOwned> TerminalError for E {}

/// Runs a guarded call. A free function so the declared return type is named in
/// its turbofish (`run::<ReturnType, _, _>`): rustc reports an unsatisfied
/// `Returns` bound there, i.e. once, on the user's return type (cached 0043a).
/// The future is boxed because an `async fn`'s opaque type would repeat the
/// bound check (and the error) at the call site; one allocation per call.
pub fn run<'a, R, C, Fut>(
    guarded: Guarded<'a, R, C>,
    body: Fut,
) -> Pin<Box<dyn Future<Output = R> + Send + 'a>>
where
    R: Returns + 'a,
    C: OnConflict<R::Ok, R::Err> + 'a,
    Fut: Future<Output = R> + Send + 'a,
{
    Box::pin(guarded.run(body))
}

/// A business error that can carry an `idem::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry an `idem::Error`",
    label = "the `Err` type must implement `From<idem::Error>` and `Send`",
    note = "add a variant wrapping `idem::Error` and implement `From<idem::Error>` for `{Self}` (with thiserror: `Idem(#[from] idem::Error)`); for a foreign error type such as `sqlx::Error`, return your own wrapper enum"
)]
pub trait IdemErrorInto: From<Error> + Send {}

#[diagnostic::do_not_recommend]
impl<E: From<Error> + Send> IdemErrorInto for E {}

/// The backstop `detect` hook for a concrete error expression: autoref
/// specialisation over [`ViaStdError`], [`ViaAsRef`], [`ViaNothing`]. A macro so
/// the method lookup happens where the error type is concrete, and so the
/// trait imports stay inside this expansion rather than in user code.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_detect {
    ($e:expr) => {{
        use $crate::__private::{ViaAsRef as _, ViaNothing as _, ViaStdError as _};
        (&&&$crate::__private::ErrProbe($e)).idem_dyn()
    }};
}
pub use crate::__idem_detect as detect;

/// Autoref specialisation: finds the `&dyn Error` view of a concrete error type,
/// whether it implements `std::error::Error` or is `anyhow`-like
/// (`AsRef<dyn Error + Send + Sync>`). Used as `(&&&ErrProbe(e)).idem_dyn()`.
#[derive(Debug)]
pub struct ErrProbe<'a, T: ?Sized>(pub &'a T);

/// First choice: the type is a `std::error::Error`.
pub trait ViaStdError<'a> {
    /// The view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: StdError + 'static> ViaStdError<'a> for &&ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0)
    }
}

/// Second choice: `anyhow::Error`, `eyre::Report` and friends.
pub trait ViaAsRef<'a> {
    /// The view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: AsRef<dyn StdError + Send + Sync + 'static>> ViaAsRef<'a> for &ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Last resort: the error cannot be searched.
pub trait ViaNothing<'a> {
    /// No view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: ?Sized> ViaNothing<'a> for ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        None
    }
}

/// Names the `Ok` and `Err` types of a function's declared return type, so
/// generated code can name them even behind a `type Result<T> = ...` alias.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Result`",
    label = "expected `Result<T, E>`",
    note = "an `#[idempotent]` function returns `Result<T, E>` (or an alias of it)"
)]
pub trait IsResult: Sized {
    /// The `Ok` type.
    type Ok;
    /// The `Err` type.
    type Err;
    /// As a plain `Result`.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
    /// Back from a plain `Result`.
    fn from_result(r: Result<Self::Ok, Self::Err>) -> Self;
}
impl<T, E> IsResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    fn into_result(self) -> Self {
        self
    }
    fn from_result(r: Self) -> Self {
        r
    }
}
