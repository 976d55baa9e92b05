//! `Spec`: the compile-time description of one `#[idempotent]` function, a
//! `static` in the expansion. The runtime turns it into the same `Policy` the
//! non-macro builder uses, over the handle's configured settings.

use std::time::Duration;

use super::site::SiteSpec;
use crate::error::Error;
use crate::handle::Idem;
use crate::policy::{Concurrency, Policy};
use crate::settings::Settings;

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
    /// Result replay window, when written as a literal (`None`: the handle's
    /// settings decide, then the built-in 24 h). An expression is not here: it
    /// is evaluated per call and given to `Guarded::ttl`.
    pub ttl: Option<Duration>,
    /// Claim life without renewal (`None`: settings, then 30 s).
    pub lease: Option<Duration>,
    /// How long a concurrent duplicate waits (`None`: settings, then 5 s or
    /// the lease if shorter).
    pub wait: Option<Duration>,
    /// Renewal bound for a hung body (`None`: settings, then 20 × lease).
    pub max_hold: Option<Duration>,
    /// Wait for or reject concurrent duplicates.
    pub concurrent: Concurrency,
    /// Stored with the result.
    pub version: u32,
    /// The backstop constraint.
    pub backstop: Option<&'static str>,
    /// `degrade = "backstop"` (or `"local"`).
    pub degrade: bool,
    /// `degrade = "local"`: an in-process claim per key while degraded.
    pub degrade_local: bool,
    /// `tx = ..`: the call runs in a savepoint of the transaction (`false`
    /// with `savepoint = false`).
    pub savepoint: bool,
}

impl Spec {
    /// The defaults the macro leaves out: `..Spec::DEFAULT` keeps the expansion
    /// to the options actually written. `function`, `template` and `scene` are
    /// always given.
    pub const DEFAULT: Spec = Spec {
        function: "",
        template: "",
        scene: "",
        ttl: None,
        lease: None,
        wait: None,
        max_hold: None,
        concurrent: Concurrency::Wait,
        version: 1,
        backstop: None,
        degrade: false,
        degrade_local: false,
        savepoint: true,
    };

    /// The literal durations, as settings.
    pub(super) const fn written(&self) -> Settings {
        Settings {
            ttl: self.ttl,
            lease: self.lease,
            wait: self.wait,
            max_hold: self.max_hold,
        }
    }
}

impl SiteSpec for Spec {
    type Policy = Policy;

    fn function(&self) -> &'static str {
        self.function
    }

    fn scene(&self) -> &'static str {
        self.scene
    }

    /// The handle's settings for this scene, under the literals written, under
    /// the expressions evaluated for this call (`dynamic`). Contradictions are
    /// `Error::Config` naming the function.
    fn policy(&self, idem: &Idem, dynamic: &Settings) -> Result<Policy, Error> {
        let mut p = idem.settings().policy(self.scene);
        self.written().apply(&mut p);
        p.concurrent = self.concurrent;
        p.version = self.version;
        p.degrade = self.degrade;
        p.degrade_local = self.degrade_local;
        p.backstop = self.backstop.map(std::borrow::Cow::Borrowed);
        if *dynamic != Settings::NONE {
            dynamic
                .check_nonzero()
                .map_err(|e| config(self.function, e))?;
            dynamic.apply(&mut p);
        }
        p.validate().map_err(|e| config(self.function, e))?;
        Ok(p)
    }
}

/// A setting of `function` that cannot work.
pub(super) fn config(function: &str, e: String) -> Error {
    Error::Config(format!("`{function}`: {e}"))
}
