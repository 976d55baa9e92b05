//! `Spec`: the compile-time description of one `#[idempotent]` function, a
//! `static` in the expansion. The runtime turns it into the same `Policy` the
//! non-macro builder uses.

use std::time::Duration;

use crate::policy::{Concurrency, Policy};

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
    /// `degrade = "backstop"` (or `"local"`).
    pub degrade: bool,
    /// `degrade = "local"`: an in-process claim per key while degraded.
    pub degrade_local: bool,
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
        degrade_local: false,
    };

    pub(super) fn policy(&self) -> Policy {
        Policy {
            ttl: self.ttl,
            lease: self.lease,
            wait: self.wait,
            max_hold: self.max_hold,
            concurrent: self.concurrent,
            version: self.version,
            degrade: self.degrade,
            degrade_local: self.degrade_local,
            backstop: self.backstop.map(std::borrow::Cow::Borrowed),
        }
    }
}
