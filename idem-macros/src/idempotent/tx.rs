//! `tx = <param>`: the transactional guard. The named parameter must be a
//! `&mut` reference (the caller's `sqlx::Transaction`, whose type rustc then
//! checks against `idem::TxDb`), and options that only make sense for a
//! record in the store are refused, each at its own name.

use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, Type};

use super::args::Args;
use crate::common::errors::Errors;
use crate::common::item::ItemFn;
use crate::common::params::Params;

/// The transaction parameter of `tx = …`, checked; `None` without the option
/// or when it is wrong (recorded).
pub(crate) fn resolve(
    args: &Args,
    item: &ItemFn,
    params: &Params,
    errors: &mut Errors,
) -> Option<Ident> {
    let opt = args.tx.as_ref()?;
    let name = &opt.value;
    refuse_other_options(args, errors);
    if params.get(&name.to_string()).is_none() {
        errors.at(name.span(), params.unknown(&name.to_string(), "`tx`"));
        return None;
    }
    let ty = item.sig.inputs.iter().find_map(|arg| match arg {
        FnArg::Typed(t) => match &*t.pat {
            Pat::Ident(p) if p.ident == *name => Some(&*t.ty),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    })?;
    match ty {
        Type::Reference(r) if r.mutability.is_some() => Some(name.clone()),
        other => {
            errors.at(
                other.span(),
                format!(
                    "`tx = {name}` names the caller's transaction, which must be a `&mut` parameter: \
                     `{name}: &mut sqlx::Transaction<'_, DB>`"
                ),
            );
            None
        }
    }
}

/// `savepoint = false`: the call takes no savepoint in the transaction (see
/// `TxGuard::savepoint`). Only with `tx`; `true` (the default) otherwise.
pub(crate) fn savepoint(args: &Args, errors: &mut Errors) -> bool {
    let Some(opt) = &args.savepoint else {
        return true;
    };
    if args.tx.is_none() {
        errors.at(
            opt.name.span(),
            "`savepoint` applies only with `tx = <param>`: it says whether the call runs in a savepoint of the caller's transaction",
        );
    }
    opt.value.value
}

/// Options whose meaning is a record in the store, not in the transaction.
fn refuse_other_options(args: &Args, errors: &mut Errors) {
    let why = |opt: &str, reason: &str| format!("`{opt}` cannot be combined with `tx`: {reason}");
    let wait = "a duplicate waits on the record's unique key in the database (its lock timeout bounds the wait)";
    let store = "with `tx` the record lives in the caller's transaction, and a failed body rolls back to a savepoint";
    let checks = [
        (
            args.degrade.as_ref().map(|o| o.name.span()),
            "degrade",
            "there is no store to lose: the record and the body's rows commit together in the caller's database",
        ),
        (
            args.backstop.as_ref().map(|o| o.name.span()),
            "backstop",
            store,
        ),
        (
            args.on_conflict.as_ref().map(|o| o.name.span()),
            "on_conflict",
            store,
        ),
        (
            args.terminal.as_ref().map(|o| o.name.span()),
            "terminal",
            store,
        ),
        (args.token.as_ref().map(|o| o.name.span()), "token", store),
        (
            args.concurrent.as_ref().map(|o| o.name.span()),
            "concurrent",
            wait,
        ),
        (args.wait.as_ref().map(|o| o.name.span()), "wait", wait),
        (
            args.lease.as_ref().map(|o| o.name.span()),
            "lease",
            "the claim never commits unfinished, so it has no lease",
        ),
        (
            args.max_hold.as_ref().map(|o| o.name.span()),
            "max_hold",
            "the claim never commits unfinished, so it is never renewed",
        ),
    ];
    for (at, opt, reason) in checks {
        if let Some(at) = at {
            errors.at(at, why(opt, reason));
        }
    }
}
