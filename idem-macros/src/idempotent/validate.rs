//! Decides whether the arguments make sense for this function and turns them
//! into a [`Plan`] for `codegen.rs`. Every problem is recorded; nothing stops at
//! the first one. Messages come out in a fixed order: the signature, the key,
//! durations, then the other options.

use proc_macro2::Span;
use syn::{Expr, Ident, LitStr, Path, Type};

use super::args::{Args, TABLE};
use crate::common::args::{Opt, choice, crate_path};
use crate::common::defaults;
use crate::common::duration::{self, DurationArg, Durations};
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};
use crate::common::key::{self, Key, KeyPiece};
use crate::common::params::Params;

/// Everything codegen needs, validated.
pub(crate) struct Plan<'a> {
    pub(crate) item: &'a ItemFn,
    /// `crate = "path"`; `None`: `::idem`.
    pub(crate) krate: Option<Path>,
    pub(crate) key: Key,
    /// `ttl`, `lease`, `wait`, `max_hold` as written: literals for the spec,
    /// expressions for per-call hooks. Unwritten, the handle's settings and
    /// then the runtime defaults apply (24h, 30s, 5s or the lease, 20 × lease);
    /// `version`'s default is 1.
    pub(crate) durations: Durations,
    pub(crate) reject: bool,
    pub(crate) version: Option<u32>,
    pub(crate) backstop: Option<LitStr>,
    pub(crate) degrade: bool,
    /// `degrade = "local"`: also an in-process claim per key while degraded.
    pub(crate) degrade_local: bool,
    pub(crate) fingerprint: Vec<Ident>,
    pub(crate) on_conflict: Option<Path>,
    /// Every named parameter and every identifier a parameter pattern binds
    /// (`req` in `Json(req): Json<T>`), in order, passed by reference to
    /// `on_conflict`.
    pub(crate) conflict_args: Vec<Ident>,
    pub(crate) terminal: Option<Path>,
    pub(crate) handle: Option<Expr>,
    pub(crate) ret: &'a Type,
    /// The `Ok` type is an axum response (`Json<T>`, `(StatusCode, Json<T>)`):
    /// stored through `__private::Reply`.
    pub(crate) reply: bool,
    /// The `idem::Fence` parameter and whether it was declared `mut`.
    pub(crate) fence: Option<(Ident, bool)>,
    /// `token = "<param>"`: where the one-time token comes from.
    pub(crate) token: Option<KeyPiece>,
    /// `tx = <param>`: the caller's transaction (the transactional guard).
    pub(crate) tx: Option<Ident>,
    /// `savepoint = false` (with `tx`): no savepoint in the transaction.
    pub(crate) savepoint: bool,
}

/// Checks `args` against `item`; `None` when anything is wrong (see `errors`).
pub(crate) fn validate<'a>(args: Args, item: &'a ItemFn, errors: &mut Errors) -> Option<Plan<'a>> {
    item::require_async(&TABLE, &item.sig, errors);
    const RETURNS: &str = "`#[idempotent]` functions return `Result<T, E>` with `T: Serialize + DeserializeOwned` and `E: From<idem::Error>`";
    let ret = if super::reply::refuse_impl_trait(&item.sig, errors)
        || item::forgotten_result(&item.sig, RETURNS, errors)
    {
        None
    } else {
        item::result_type(&item.sig, RETURNS, errors)
            .filter(|ret| !super::reply::refuse_response(ret, errors))
    };
    let params = Params::of(item, errors);
    let key = match &args.key {
        None => {
            errors.missing(
                "key",
                Span::call_site(),
                "missing `key` in `#[idempotent]`; e.g. `#[idempotent(key = \"order-create:<order_id>\")]`",
            );
            Key::default()
        }
        Some(Opt { value, .. }) => key::resolve(value, &params, "key template", errors),
    };
    let durations = durations(&args, errors);

    // Enumerated strings and numbers.
    let reject = args
        .concurrent
        .as_ref()
        .and_then(|o| choice(&o.value, "concurrent", &["wait", "reject"], errors))
        == Some("reject");
    let version = args.version.as_ref().and_then(|Opt { value, .. }| {
        let parsed = value.base10_parse::<u32>();
        if parsed.is_err() {
            errors.at(
                value.span(),
                "`version` must be an integer from 0 to 4294967295",
            );
        }
        parsed.ok()
    });
    if let (Some(w), true) = (&args.wait, reject) {
        errors.at(
            w.name.span(),
            "`wait` has no effect with `concurrent = \"reject\"`: a rejected duplicate does not wait; remove one of them",
        );
    }
    if let Some(Opt { value, .. }) = &args.backstop {
        let name = value.value();
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            errors.at(
                value.span(),
                "`backstop` must name a unique constraint or index, e.g. `\"uk_order_no\"`",
            );
        }
    }
    let (degrade, degrade_local) = match &args.degrade {
        None => (false, false),
        Some(Opt { name, value }) => {
            let mode = value.value();
            if mode != "backstop" && mode != "local" {
                errors.at(
                    value.span(),
                    format!(
                        "invalid value `{mode}` for `degrade`; expected `\"backstop\"` or \
                         `\"local\"` (the backstop plus an in-process claim per key)"
                    ),
                );
            } else if args.backstop.is_none() {
                errors.at(
                    name.span(),
                    format!(
                        "`degrade = \"{mode}\"` requires `backstop = \"<unique constraint>\"`: \
                         without a constraint nothing stops duplicates while the store is down"
                    ),
                );
            }
            (true, mode == "local")
        }
    };
    let fingerprint = match &args.fingerprint {
        None => Vec::new(),
        Some(Opt { name, value }) => {
            if value.is_empty() {
                errors.at(name.span(), "`fingerprint` lists no parameters; remove it or name the request payload, e.g. `fingerprint = [cmd]`");
            }
            for id in value {
                if params.get(&id.to_string()).is_none() {
                    errors.at(id.span(), params.unknown(&id.to_string(), "`fingerprint`"));
                }
            }
            value.clone()
        }
    };
    let token = args
        .token
        .as_ref()
        .and_then(|o| super::token::resolve(&o.value, &params, errors));
    let tx = super::tx::resolve(&args, item, &params, errors);
    let savepoint = super::tx::savepoint(&args, errors);
    let krate = crate_path(args.krate.as_ref(), errors);
    let on_conflict = args.on_conflict.map(|o| o.value);

    let ret = ret?;
    if !errors.is_empty() {
        return None;
    }
    Some(Plan {
        item,
        krate,
        key,
        durations,
        reject,
        version,
        backstop: args.backstop.map(|o| o.value),
        degrade,
        degrade_local,
        fingerprint,
        on_conflict,
        conflict_args: params.names().cloned().collect(),
        terminal: args.terminal.map(|o| o.value),
        handle: args.handle.map(|o| o.value),
        ret,
        reply: super::reply::is_axum_reply(ret),
        fence: params.fence,
        token,
        tx,
        savepoint,
    })
}

/// Parses the durations and checks them against each other, filling in the
/// runtime defaults (`common/defaults.rs`) for the ones not written. A value
/// written as an expression is unknown until run time: nothing is compared
/// with it here (the runtime does, `Error::Config` naming the function).
fn durations(args: &Args, errors: &mut Errors) -> Durations {
    let get = |opt: &Option<Opt<DurationArg>>, errors: &mut Errors| opt.as_ref()?.value.get(errors);
    let ttl = get(&args.ttl, errors);
    let lease = get(&args.lease, errors);
    let wait = get(&args.wait, errors);
    let max_hold = get(&args.max_hold, errors);
    // A malformed value was reported already: compare only what is known.
    let ttl_v = if args.ttl.is_none() {
        Some(defaults::TTL)
    } else {
        ttl
    };
    let lease_v = if args.lease.is_none() {
        Some(defaults::LEASE)
    } else {
        lease
    };
    let show = duration::display;

    if let (Some(ttl_v), Some(lease_v)) = (ttl_v, lease_v)
        && lease_v >= ttl_v
    {
        match (&args.lease, &args.ttl) {
            (Some(l), _) => errors.at(
                l.value.span(),
                format!(
                    "`lease` ({}) must be shorter than `ttl` ({}): a result must outlive the claim that produced it",
                    show(lease_v),
                    show(ttl_v)
                ),
            ),
            (None, Some(t)) => errors.at(
                t.value.span(),
                format!(
                    "`ttl` ({}) must be longer than the default `lease` ({}); set a shorter `lease` as well",
                    show(ttl_v),
                    show(lease_v)
                ),
            ),
            (None, None) => {}
        }
    }
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
                show(hold),
                show(lease_v),
                idem_duration::HoldTooShort::WHY
            ),
        );
    }
    let arg = duration::written;
    Durations::of(&[
        ("ttl", arg(&args.ttl), ttl),
        ("lease", arg(&args.lease), lease),
        ("wait", arg(&args.wait), wait),
        ("max_hold", arg(&args.max_hold), max_hold),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;

    /// The messages for `#[idempotent(args)] async fn f(id: u64) -> Result<u64, E>`.
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

    #[test]
    fn max_hold_must_cover_one_lease() {
        let e = check(r#"key = "k:<id>", lease = "10s", max_hold = "5s""#);
        assert!(
            e.contains("`max_hold` (5s) must not be shorter than `lease` (10s)"),
            "{e}"
        );
        let e = check(r#"key = "k:<id>", max_hold = "20s""#);
        assert!(
            e.contains("`max_hold` (20s) must not be shorter than the default `lease` (30s)"),
            "{e}"
        );
        for ok in [
            r#"key = "k:<id>", lease = "10s", max_hold = "10s""#,
            r#"key = "k:<id>", max_hold = "5m""#,
            r#"key = "k:<id>", lease = "1s", max_hold = "2s""#,
        ] {
            assert_eq!(check(ok), "", "{ok}");
        }
        // A malformed lease is reported once, and nothing is compared with it.
        let e = check(r#"key = "k:<id>", lease = "5x", max_hold = "1s""#);
        assert!(
            e.contains("invalid duration `5x`") && !e.contains("max_hold"),
            "{e}"
        );
    }

    #[test]
    fn ttl_must_outlive_the_lease_default_or_written() {
        let e = check(r#"key = "k:<id>", ttl = "10s""#);
        assert!(
            e.contains("`ttl` (10s) must be longer than the default `lease` (30s)"),
            "{e}"
        );
        let e = check(r#"key = "k:<id>", lease = "2d""#);
        assert!(
            e.contains("`lease` (2d) must be shorter than `ttl` (1d)"),
            "{e}"
        );
    }

    #[test]
    fn expressions_are_not_compared_at_compile_time() {
        // Unknown until run time: the runtime checks them (`Error::Config`).
        for ok in [
            r#"key = "k:<id>", ttl = TTL, lease = "2d""#,
            r#"key = "k:<id>", ttl = "10s", lease = cfg.lease()"#,
            r#"key = "k:<id>", lease = Duration::from_secs(10), max_hold = "5s""#,
            r#"key = "k:<id>", wait = WAIT, concurrent = "wait""#,
        ] {
            assert_eq!(check(ok), "", "{ok}");
        }
        // A literal is still compared with the other literals and defaults.
        let e = check(r#"key = "k:<id>", ttl = "10s", wait = W"#);
        assert!(e.contains("must be longer than the default `lease`"), "{e}");
        let e = check(r#"key = "k:<id>", ttl = 30"#);
        assert!(e.contains("a duration needs a unit"), "{e}");
    }

    #[test]
    fn literals_go_to_the_spec_and_expressions_to_hooks() {
        let mut errors = Errors::default();
        let args = super::super::args::parse(
            r#"key = "k:<id>", ttl = "1h", lease = LEASE, max_hold = "1h""#
                .parse()
                .unwrap(),
            &mut errors,
        );
        let item: ItemFn =
            syn::parse_str("async fn f(id: u64) -> Result<u64, E> { Ok(id) }").unwrap();
        let plan = validate(args, &item, &mut errors).expect("valid");
        let fixed: Vec<&str> = plan.durations.fixed.iter().map(|(n, _)| *n).collect();
        let dynamic: Vec<&str> = plan.durations.dynamic.iter().map(|(n, _)| *n).collect();
        assert_eq!(fixed, ["ttl", "max_hold"]);
        assert_eq!(dynamic, ["lease"]);
    }
}
