//! Installing a capturing subscriber on this thread so that it sees every
//! span and event the test causes, whatever the other tests do meanwhile.
//!
//! `tracing` caches one interest per callsite for the whole process. While a
//! single dispatcher is registered, a callsite's interest is taken from the
//! default dispatcher of whichever thread reaches it first: a sibling test
//! without a subscriber caches "never", and the capture of this thread then
//! never sees that span. A second dispatcher kept alive for the whole run
//! makes `tracing` ask every registered dispatcher instead, and a rebuild
//! after installing repairs the callsites registered before.

use std::sync::OnceLock;

use tracing::Dispatch;
use tracing::subscriber::{DefaultGuard, NoSubscriber};

/// Sets `subscriber` as this thread's default until the guard drops.
pub(crate) fn capture<S>(subscriber: S) -> DefaultGuard
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    pin_dispatchers();
    let guard = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();
    guard
}

/// Keeps a second dispatcher registered for the rest of the run (see the
/// module's doc); call before `with_default`.
pub(crate) fn pin_dispatchers() {
    static PIN: OnceLock<Dispatch> = OnceLock::new();
    PIN.get_or_init(|| Dispatch::new(NoSubscriber::default()));
}
