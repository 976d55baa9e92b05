//! The runtime defaults the macros judge options against at compile time
//! (e.g. a written `ttl` must outlive the default `lease`). A proc-macro crate
//! cannot read the runtime's constants while it expands, so these are copies.

use std::time::Duration;

/// `idem_runtime::policy::DEFAULT_TTL`.
pub(crate) const TTL: Duration = Duration::from_secs(24 * 3600);
/// `idem_runtime::policy::DEFAULT_LEASE`.
pub(crate) const LEASE: Duration = Duration::from_secs(30);
