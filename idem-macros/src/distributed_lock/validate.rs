//! Decides whether a `#[distributed_lock]` makes sense for this function and
//! turns it into a [`Plan`]. Every problem is recorded at its own span.

use proc_macro2::Span;
use syn::{Expr, Ident, Path, Type};

use super::args::{Args, TABLE};
use crate::common::args::{Opt, crate_path};
use crate::common::defaults;
use crate::common::duration::{self, DurationArg, Durations};
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};
use crate::common::key::{self, Key};
use crate::common::params::Params;

/// Everything codegen needs, validated.
pub(crate) struct Plan<'a> {
    pub(crate) item: &'a ItemFn,
    pub(crate) krate: Option<Path>,
    pub(crate) key: Key,
    /// `lease`, `wait`, `max_hold` as written (literals for the spec,
    /// expressions for per-call hooks); unwritten, the handle's settings and
    /// then the runtime defaults (30 s, 5 s or the lease, 20 × lease).
    pub(crate) durations: Durations,
    pub(crate) handle: Option<Expr>,
    pub(crate) ret: &'a Type,
    /// The `idem::Fence` parameter and whether it was declared `mut`.
    pub(crate) fence: Option<(Ident, bool)>,
}

/// Checks `args` against `item`; `None` when anything is wrong (see `errors`).
pub(crate) fn validate<'a>(args: Args, item: &'a ItemFn, errors: &mut Errors) -> Option<Plan<'a>> {
    item::require_async(&TABLE, &item.sig, errors);
    let ret = item::result_type(
        &item.sig,
        "`#[distributed_lock]` functions return `Result<T, E>` with `E: From<idem::Error>`",
        errors,
    );
    let params = Params::of(item, errors);
    let key = match &args.key {
        None => {
            errors.missing(
                "key",
                Span::call_site(),
                "missing `key` in `#[distributed_lock]`; e.g. `#[distributed_lock(key = \"lock:deduct:order:<order_no>\")]`",
            );
            Key::default()
        }
        Some(Opt { value, .. }) => key::resolve(value, &params, "key template", errors),
    };
    let get = |opt: &Option<Opt<DurationArg>>, errors: &mut Errors| opt.as_ref()?.value.get(errors);
    let lease = get(&args.lease, errors);
    let wait = get(&args.wait, errors);
    let max_hold = get(&args.max_hold, errors);
    let lease_v = if args.lease.is_none() {
        Some(defaults::LEASE)
    } else {
        lease
    };
    // The one `max_hold` rule, shared with the runtime (`idem_duration::check_hold`).
    if let (Some(m), Some(hold), Some(lease_v)) = (&args.max_hold, max_hold, lease_v)
        && idem_duration::check_hold(lease_v, hold).is_err()
    {
        let lease_name = match args.lease {
            Some(_) => "`lease`",
            None => "the default `lease`",
        };
        errors.at(
            m.value.span(),
            format!(
                "`max_hold` ({}) must not be shorter than {lease_name} ({}): {}",
                duration::display(hold),
                duration::display(lease_v),
                idem_duration::HoldTooShort::WHY
            ),
        );
    }
    let arg = duration::written;
    let durations = Durations::of(&[
        ("lease", arg(&args.lease), lease),
        ("wait", arg(&args.wait), wait),
        ("max_hold", arg(&args.max_hold), max_hold),
    ]);
    let krate = crate_path(args.krate.as_ref(), errors);
    let ret = ret?;
    if !errors.is_empty() {
        return None;
    }
    Some(Plan {
        item,
        krate,
        key,
        durations,
        handle: args.handle.map(|o| o.value),
        ret,
        fence: params.fence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;

    fn check(args: &str) -> String {
        let mut errors = Errors::default();
        let args = super::super::args::parse(args.parse().unwrap(), &mut errors);
        let item: TokenStream = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }"
            .parse()
            .unwrap();
        let item: ItemFn = syn::parse2(item).unwrap();
        let plan = validate(args, &item, &mut errors);
        assert_eq!(plan.is_some(), errors.is_empty());
        errors.into_compile_errors().to_string()
    }

    /// The guard's rule (`idem_duration::check_hold`): equal to the lease is the
    /// "never renew" setting, shorter is refused (issue 24: the lock used to
    /// refuse equal too).
    #[test]
    fn max_hold_must_cover_one_lease() {
        let e = check(r#"key = "lock:k:<id>", lease = "3s", max_hold = "2s""#);
        assert!(
            e.contains("`max_hold` (2s) must not be shorter than `lease` (3s)"),
            "{e}"
        );
        assert_eq!(
            check(r#"key = "lock:k:<id>", lease = "3s", max_hold = "3s""#),
            ""
        );
        let e = check(r#"key = "lock:k:<id>", max_hold = "10s""#);
        assert!(e.contains("the default `lease` (30s)"), "{e}");
        assert_eq!(
            check(r#"key = "lock:k:<id>", lease = "3s", max_hold = "60s""#),
            ""
        );
    }

    #[test]
    fn key_needs_a_placeholder_and_known_parameters() {
        assert!(check(r#"key = "lock:k""#).contains("has no placeholder"));
        assert!(check(r#"key = "lock:k:<idd>""#).contains("did you mean `id`?"));
        assert!(
            check(r#"key = "lock:k:<id>", lease = "0s""#).contains("must be greater than zero")
        );
    }
}
