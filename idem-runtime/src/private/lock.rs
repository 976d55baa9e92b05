//! `LockSpec`, `Locked` and `lock`: the one call a `#[distributed_lock]`
//! expansion makes. It hands the body to the same protocol as `Idem::lock`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::bounds::{IdemErrorInto, IsResult};
use super::site::{Site, SiteSpec};
use super::spec::config;
use super::{FenceCell, KeyBuf};
use crate::error::Error;
use crate::handle::Idem;
use crate::lock::Acquire;
use crate::policy::LockPolicy;
use crate::settings::Settings;

/// The compile-time description of one locked function.
#[derive(Debug)]
pub struct LockSpec {
    /// `module_path!()::name`, for diagnostics.
    pub function: &'static str,
    /// The key template as written.
    pub template: &'static str,
    /// The literal scene prefix of the template.
    pub scene: &'static str,
    /// Life of the lock without renewal, when written as a literal (`None`:
    /// the handle's settings, then 30 s).
    pub lease: Option<Duration>,
    /// How long a caller waits for a busy lock (`None`: settings, then 5 s or
    /// the lease if shorter).
    pub wait: Option<Duration>,
    /// Renewal bound for a hung body (`None`: settings, then 20 × lease).
    pub max_hold: Option<Duration>,
}

impl LockSpec {
    /// The defaults the macro leaves out (`..LockSpec::DEFAULT`).
    pub const DEFAULT: LockSpec = LockSpec {
        function: "",
        template: "",
        scene: "",
        lease: None,
        wait: None,
        max_hold: None,
    };
}

impl SiteSpec for LockSpec {
    type Policy = LockPolicy;

    fn function(&self) -> &'static str {
        self.function
    }

    fn scene(&self) -> &'static str {
        self.scene
    }

    /// The handle's settings for this scene, under the literals, under the
    /// expressions evaluated for this call; `Error::Config` naming the function.
    fn policy(&self, idem: &Idem, dynamic: &Settings) -> Result<LockPolicy, Error> {
        let mut p = idem.settings().lock_policy(self.scene);
        let written = Settings {
            lease: self.lease,
            wait: self.wait,
            max_hold: self.max_hold,
            ..Settings::NONE
        };
        written.apply_lock(&mut p);
        if *dynamic != Settings::NONE {
            dynamic
                .check_nonzero()
                .map_err(|e| config(self.function, e))?;
            dynamic.apply_lock(&mut p);
        }
        p.validate().map_err(|e| config(self.function, e))?;
        Ok(p)
    }
}

/// What a `#[distributed_lock]` function may return: `Result<T, E>` whose error
/// can carry an `idem::Error` (`LockBusy`, `StoreUnavailable`, ...).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a `#[distributed_lock]` function",
    label = "expected `Result<T, E>`",
    note = "the function must return `Result<T, E>` with `T: Send` and `E: From<idem::Error> + Send`"
)]
pub trait LockReturns: IsResult<Ok: Send, Err: IdemErrorInto> {}

impl<T: Send, E: IdemErrorInto> LockReturns for Result<T, E> {}

/// One locked call as generated code builds it, typed by the declared return type.
pub struct Locked<'h, R: IsResult> {
    spec: &'static LockSpec,
    key: KeyBuf,
    handle: Option<&'h Idem>,
    fence: Option<&'h FenceCell>,
    /// Durations written as expressions, evaluated for this call.
    dynamic: Settings,
    _ret: std::marker::PhantomData<fn() -> R>,
}

impl<R: IsResult> std::fmt::Debug for Locked<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked")
            .field("function", &self.spec.function)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<'h, R: IsResult> Locked<'h, R> {
    /// Starts the call.
    pub fn new(spec: &'static LockSpec, key: KeyBuf) -> Self {
        Locked {
            spec,
            key,
            handle: None,
            fence: None,
            dynamic: Settings::NONE,
            _ret: std::marker::PhantomData,
        }
    }

    /// Uses this handle instead of the installed global.
    pub fn handle(mut self, idem: &'h Idem) -> Self {
        self.handle = Some(idem);
        self
    }

    /// The cell the body reads its `idem::Fence` parameter from.
    pub fn fence(mut self, cell: &'h FenceCell) -> Self {
        self.fence = Some(cell);
        self
    }

    /// `lease = <expr>`: evaluated for this call, checked when it runs.
    pub fn lease(mut self, d: Duration) -> Self {
        self.dynamic.lease = Some(d);
        self
    }

    /// `wait = <expr>`.
    pub fn wait(mut self, d: Duration) -> Self {
        self.dynamic.wait = Some(d);
        self
    }

    /// `max_hold = <expr>`.
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.dynamic.max_hold = Some(d);
        self
    }

    async fn run<Fut>(self, body: Fut) -> R
    where
        R: LockReturns,
        Fut: Future<Output = R> + Send,
    {
        let site = match Site::open(self.spec, self.handle, self.key, &self.dynamic) {
            Ok(site) => site,
            Err(e) => return R::from_result(Err(e.into())),
        };
        let cell = self.fence;
        // A function without an `idem::Fence` parameter never reads the fence:
        // it claims unfenced, as `Lock::run_unfenced` does.
        let acquire = Acquire {
            idem: site.idem,
            key: &site.key,
            policy: &site.policy,
            fenced: cell.is_some(),
        };
        let result = acquire
            .execute(move |grant| {
                if let Some(c) = cell {
                    c.set(grant.fence());
                }
                async move { body.await.into_result() }
            })
            .await;
        R::from_result(result)
    }
}

/// Runs a locked call; the declared return type is named in its turbofish so an
/// unsatisfied bound is one error there. Boxed for the same reason as `run`.
pub fn lock<'a, R, Fut>(
    locked: Locked<'a, R>,
    body: Fut,
) -> Pin<Box<dyn Future<Output = R> + Send + 'a>>
where
    R: LockReturns + 'a,
    Fut: Future<Output = R> + Send + 'a,
{
    Box::pin(locked.run(body))
}
