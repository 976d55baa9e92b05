//! The runtime defaults the macros judge options against at compile time
//! (e.g. a written `ttl` must outlive the default `lease`). A proc-macro crate
//! cannot read the runtime's constants while it expands, so these are copies,
//! pinned to `idem_runtime` by the test below: a change on either side fails it.

use std::time::Duration;

/// `idem_runtime::policy::DEFAULT_TTL`.
pub(crate) const TTL: Duration = Duration::from_secs(24 * 3600);
/// `idem_runtime::policy::DEFAULT_LEASE`.
pub(crate) const LEASE: Duration = Duration::from_secs(30);
/// `idem_runtime::policy::DEFAULT_WAIT`: what the docs of `wait` promise.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const WAIT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use idem_runtime::__private::Spec;
    use idem_runtime::{Concurrency, policy};

    #[test]
    fn copies_equal_the_runtime_defaults() {
        assert_eq!(super::TTL, policy::DEFAULT_TTL);
        assert_eq!(super::LEASE, policy::DEFAULT_LEASE);
        // The expansion leaves these to `..Spec::DEFAULT`, so what the docs
        // and the macro assume about them must hold there too.
        // Unwritten durations are `None` in the spec: the handle's settings,
        // then `Policy::default()`, decide; the macro's copies must be those.
        assert_eq!(Spec::DEFAULT.ttl, None);
        assert_eq!(Spec::DEFAULT.lease, None);
        let built_in = idem_runtime::Policy::default();
        assert_eq!(built_in.ttl, super::TTL);
        assert_eq!(built_in.lease, super::LEASE);
        assert_eq!(super::WAIT, policy::DEFAULT_WAIT);
        // `concurrent = "wait"` is emitted as nothing: it must be the default.
        assert_eq!(Spec::DEFAULT.concurrent, Concurrency::Wait);
        // `max_hold` is emitted only when written; unwritten, the runtime's
        // documented default (20 × lease) applies.
        assert_eq!(Spec::DEFAULT.max_hold, None);
        assert_eq!(Spec::DEFAULT.wait, None);
        assert_eq!(Spec::DEFAULT.version, 1);
        assert!(!Spec::DEFAULT.degrade && Spec::DEFAULT.backstop.is_none());
        const { assert!(!Spec::DEFAULT.degrade_local) };
    }
}
