//! `Guarded` and `run!`: the one call an `#[idempotent]` expansion makes. It
//! hands the body to the same engine as the non-macro builder.

use std::future::Future;
use std::time::Duration;

use super::bounds::{IsResult, Returns};
use super::site::Site;
use super::{FenceCell, KeyBuf, Spec};
use crate::fingerprint::{Fingerprint, FingerprintBuilder};
use crate::guard::{Guard, Register};
use crate::handle::Idem;
use crate::hooks::{DetectFn, Hooks, NoConflict, OnConflict, Terminal};
use crate::settings::Settings;

/// One guarded call as generated code builds it, typed by the function's
/// declared return type `R` (`Result<T, E>` or an alias of it).
pub struct Guarded<'h, R: IsResult, C = NoConflict> {
    spec: &'static Spec,
    key: KeyBuf,
    handle: Option<&'h Idem>,
    fingerprint: Result<Fingerprint, String>,
    hooks: Hooks<R::Err, C>,
    fence: Option<&'h FenceCell>,
    token: Option<String>,
    /// Durations written as expressions, evaluated for this call.
    dynamic: Settings,
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
            token: None,
            dynamic: Settings::NONE,
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

    /// Terminal errors (stored and replayed). The expansion builds the
    /// [`Terminal`] in a local function whose bound names
    /// [`TerminalError`](crate::bounds::TerminalError), so an error type that
    /// cannot be stored is reported there, in the user's file.
    pub fn terminal(mut self, terminal: Terminal<R::Err>) -> Self {
        self.hooks = self.hooks.terminal(terminal);
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
            token: self.token,
            dynamic: self.dynamic,
        }
    }

    /// `ttl = <expr>`: evaluated for this call, checked when it runs (zero, or
    /// against the other settings, is `Error::Config` naming the function).
    pub fn ttl(mut self, d: Duration) -> Self {
        self.dynamic.ttl = Some(d);
        self
    }

    /// `lease = <expr>` (see [`ttl`](Self::ttl)).
    pub fn lease(mut self, d: Duration) -> Self {
        self.dynamic.lease = Some(d);
        self
    }

    /// `wait = <expr>` (see [`ttl`](Self::ttl)).
    pub fn wait(mut self, d: Duration) -> Self {
        self.dynamic.wait = Some(d);
        self
    }

    /// `max_hold = <expr>` (see [`ttl`](Self::ttl)).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.dynamic.max_hold = Some(d);
        self
    }

    /// The cell the body reads its `idem::Fence` parameter from.
    pub fn fence(mut self, cell: &'h FenceCell) -> Self {
        self.fence = Some(cell);
        self
    }

    /// `token = "<param>"`: the body runs only after consuming this one-time
    /// token (scope `token:<scene>`); a failed body gives it back.
    pub fn token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// What `run_in_tx` needs: the spec, the key, the handle, the fingerprint
    /// and the durations evaluated for this call.
    #[cfg(feature = "sql")]
    pub(super) fn into_parts(
        self,
    ) -> (
        &'static Spec,
        KeyBuf,
        Option<&'h Idem>,
        Result<Fingerprint, String>,
        Settings,
    ) {
        (
            self.spec,
            self.key,
            self.handle,
            self.fingerprint,
            self.dynamic,
        )
    }

    /// Runs the body under the guard and returns what the function returns.
    ///
    /// The one `Returns` bound is checked against the type the macro names in
    /// `Guarded::<R>::new` (the user's return type), so a result that cannot be
    /// stored is one error there.
    ///
    /// Not an `async fn`: the preamble runs here, and the engine's one async
    /// layer ([`Guard::drive_to`]) is the whole future, finished into `R`
    /// there, so the call pays no layer (and no copy of the engine's future)
    /// that the non-macro guard does not.
    pub fn run<Fut>(self, body: Fut) -> impl Future<Output = R> + Send + 'h
    where
        R: Returns + 'h,
        C: OnConflict<R::Ok, R::Err> + 'h,
        Fut: Future<Output = R> + Send + 'h,
    {
        let cell = self.fence;
        // A function without an `idem::Fence` parameter never reads its fence.
        let fenced = cell.is_some();
        let site = Site::open(self.spec, self.handle, self.key, &self.dynamic);
        // The token is consumed inside the guarded body: a repeat of a finished
        // call replays its result without needing the (consumed) token again.
        let token = match (&site, self.token) {
            (Ok(site), Some(t)) => Some((
                site.idem,
                site.policy.lease,
                format!("token:{}", self.spec.scene),
                t,
            )),
            _ => None,
        };
        let guard = site.map(|site| Guard {
            idem: site.idem,
            key: site.key,
            policy: site.policy,
            fingerprint: self.fingerprint,
            technique: crate::observe::Technique::Idempotent,
        });
        let body = move |fence| {
            if let Some(c) = cell {
                c.set(fence);
            }
            async move {
                match token {
                    None => body.await.into_result(),
                    // Boxed: kept out of every other call's future.
                    Some((idem, lease, scope, token)) => {
                        Box::pin(
                            idem.tokens()
                                .consume(&scope, &token)
                                .lease(lease)
                                .run(|_| async move { body.await.into_result() }),
                        )
                        .await
                    }
                }
            }
        };
        let finish = |r: Result<crate::outcome::Outcome<R::Ok>, R::Err>| {
            R::from_result(r.map(crate::outcome::Outcome::into_inner))
        };
        Guard::drive_to(guard, Register::Done, fenced, self.hooks, body, finish)
    }
}

/// Runs a guarded call: the one runtime call of an `#[idempotent]` expansion,
/// `idem::__idem_run!(__idem_run, __idem_run::<R, _, _>(call, body))` (the
/// facade's root name of this macro, which rustc's "this error originates in
/// the macro …" repeats: no private module in a user's message), where
/// `R` is the function's declared return type (or `Http<R>` for an axum
/// reply), `call` the [`Guarded`] descriptor and `body` the function's body as
/// a future. It defines the local function named first and evaluates the
/// call written second, which the expansion spans at the user's return type.
///
/// The function's bounds, each by its public `idem::bounds` trait so that a
/// message names it by that path:
///
/// - `R: IsResult<Ok: Storable, Err: IdemErrorInto>`: a result that cannot be
///   stored, or an error that cannot carry an `idem::Error`, is reported by
///   its failing part ([`Storable`](crate::bounds::Storable),
///   [`IdemErrorInto`](crate::bounds::IdemErrorInto));
/// - `C: OnConflict<R::Ok, R::Err>`: the backstop's lookup returns the result;
/// - the body's future is `Send`.
///
/// A macro, not a function: rustc ends an unmet bound's message with
/// "required by a bound in `<function>`" and shows that function's source. The
/// function this defines is local to the call, so the message names
/// `__idem_run` and shows the user's own code, never idem's sources.
///
/// The future is boxed (one allocation per call): returned as an opaque
/// `impl Future`, its bounds are checked again where it is awaited, and each
/// unmet bound is reported four times instead of once.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_run {
    ($name:ident, $call:expr $(,)?) => {{
        #[allow(clippy::type_complexity)]
        fn $name<'a, R, C, Fut>(
            call: $crate::__private::Guarded<'a, R, C>,
            body: Fut,
        ) -> ::core::pin::Pin<
            ::std::boxed::Box<dyn ::core::future::Future<Output = R> + ::core::marker::Send + 'a>,
        >
        where
            R: $crate::bounds::IsResult<
                    Ok: $crate::bounds::Storable,
                    Err: $crate::bounds::IdemErrorInto,
                > + 'a,
            C: $crate::__private::OnConflict<R::Ok, R::Err> + 'a,
            Fut: ::core::future::Future<Output = R> + ::core::marker::Send + 'a,
        {
            ::std::boxed::Box::pin(call.run(body))
        }
        $call
    }};
}
pub use crate::__idem_run as run;
