//! Whether a `#[state_transition]` makes sense before any code is generated:
//! an `async fn` returning a `Result`, every required option present, the
//! transaction and the key naming parameters, identifiers that can be spliced
//! into SQL. Edges and states are checked by rustc against the derive's
//! `const fn`s (see `codegen.rs`), since only the derive knows the machine.

use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path, Type};

use super::args::{Args, StateRef, TABLE};
use crate::common::args::{Opt, crate_path};
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};
use crate::common::params::{self, Params};

/// A checked transition, ready for `codegen.rs`.
pub(crate) struct Plan<'a> {
    pub(crate) item: &'a ItemFn,
    pub(crate) ret: &'a Type,
    pub(crate) krate: Option<Path>,
    pub(crate) machine: Path,
    pub(crate) from: Vec<StateRef>,
    pub(crate) to: StateRef,
    pub(crate) table: LitStr,
    pub(crate) key: Expr,
    pub(crate) key_column: LitStr,
    pub(crate) tx: Ident,
    pub(crate) state_column: Option<LitStr>,
    pub(crate) version_column: Option<LitStr>,
    /// `savepoint = false`: no savepoint (an edge with one source state).
    pub(crate) savepoint: bool,
    pub(crate) handle: Option<Expr>,
}

/// Checks `args` against `item`; `None` when something is missing or wrong.
pub(crate) fn validate<'a>(args: Args, item: &'a ItemFn, errors: &mut Errors) -> Option<Plan<'a>> {
    item::require_async(&TABLE, &item.sig, errors);
    let ret = item::wrapped_result_type(&TABLE, &item.sig, "Transition", errors);
    let params = Params::of(item, errors);
    let at = item.sig.ident.span();
    let need = |name: &'static str, errors: &mut Errors| {
        errors.missing(
            name,
            at,
            format!("`#[state_transition]` needs `{name} = ...`; set it here or in the `#[idem::transitions(..)]` of the enclosing `impl`"),
        );
    };
    let machine = args.machine.map(|o| o.value);
    let from = args.from.map(|o| o.value);
    let to = args.to.map(|o| o.value).and_then(|v| v.into_iter().next());
    for (name, missing) in [
        ("machine", machine.is_none()),
        ("from", from.is_none()),
        ("to", to.is_none()),
        ("table", args.table.is_none()),
        ("key", args.key.is_none()),
        ("key_column", args.key_column.is_none()),
    ] {
        if missing {
            need(name, errors);
        }
    }
    for lit in [
        &args.table,
        &args.key_column,
        &args.state_column,
        &args.version_column,
    ]
    .into_iter()
    .flatten()
    {
        ident_literal(lit, errors);
    }
    let savepoint = savepoint(args.savepoint.as_ref(), from.as_deref(), errors);
    let tx = params::transaction(&TABLE, args.tx, &params, at, errors);
    if let Some(key) = &args.key {
        key_root(&key.value, &params, errors);
    }
    let krate = crate_path(args.krate.as_ref(), errors);
    if !errors.is_empty() {
        return None;
    }
    Some(Plan {
        item,
        ret: ret?,
        krate,
        machine: machine?,
        from: from?,
        to: to?,
        table: args.table?.value,
        key: args.key?.value,
        key_column: args.key_column?.value,
        tx: tx?,
        state_column: args.state_column.map(|o| o.value),
        version_column: args.version_column.map(|o| o.value),
        savepoint,
        handle: args.handle.map(|o| o.value),
    })
}

/// `savepoint = false`: a failing body then sets the row back to its source
/// state by a compensating update, so the edge must have exactly one.
fn savepoint(
    opt: Option<&Opt<syn::LitBool>>,
    from: Option<&[StateRef]>,
    errors: &mut Errors,
) -> bool {
    let Some(opt) = opt else {
        return true;
    };
    if !opt.value.value && from.is_some_and(|f| f.len() > 1) {
        errors.at(
            opt.name.span(),
            "`savepoint = false` needs exactly one source state: a failing body sets the row back to it by a compensating update; keep the savepoint or split the edge",
        );
    }
    opt.value.value
}

/// `key = order_no` or `key = cmd.order_no`: the root must be a parameter.
fn key_root(key: &Expr, params: &Params, errors: &mut Errors) {
    let mut e = key;
    while let Expr::Field(f) = e {
        e = &f.base;
    }
    match e {
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let name = p.path.get_ident().expect("checked").to_string();
            if params.get(&name).is_none() {
                errors.at(p.span(), params.unknown(&name, "`key`"));
            }
        }
        other => errors.at(
            other.span(),
            "expected a parameter or a field of one: `key = order_no` or `key = cmd.order_no`",
        ),
    }
}

/// A table or column name must be a plain identifier (reserved words are
/// refused by the runtime's check, which knows every dialect's list).
fn ident_literal(lit: &Opt<LitStr>, errors: &mut Errors) {
    let v = lit.value.value();
    let mut chars = v.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && v.len() <= 63;
    if !plain {
        errors.at(
            lit.value.span(),
            format!("`{v}` is not a plain SQL identifier (letters, digits, `_`, at most 63 bytes)"),
        );
    }
}
