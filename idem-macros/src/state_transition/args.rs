//! The option table of `#[state_transition]` (and of the impl-level
//! `#[transitions]`, which takes the machine-level subset): which names each
//! takes and how each value is read.

use syn::spanned::Spanned;
use syn::{Expr, ExprArray, Ident, Lit, LitStr, Path};

use crate::common::args::{self, Opt, Table, read};
use crate::common::errors::Errors;

/// The macro's name and every option, in documentation order.
pub(crate) const TABLE: Table = Table {
    name: "state_transition",
    options: &[
        "machine",
        "from",
        "to",
        "table",
        "key",
        "key_column",
        "tx",
        "state_column",
        "version_column",
        "savepoint",
        "handle",
        "crate",
    ],
};

/// What `#[transitions(..)]` on an `impl` may set for its methods: everything
/// but the edge.
pub(crate) const SHARED: Table = Table {
    name: "transitions",
    options: &[
        "machine",
        "table",
        "key",
        "key_column",
        "tx",
        "state_column",
        "version_column",
        "savepoint",
        "handle",
        "crate",
    ],
};

/// A state as written: a variant name or its stored value.
#[derive(Debug, Clone)]
pub(crate) enum StateRef {
    Variant(Ident),
    Stored(LitStr),
}

/// The arguments as written.
#[derive(Default, Debug)]
pub(crate) struct Args {
    pub(crate) machine: Option<Opt<Path>>,
    pub(crate) from: Option<Opt<Vec<StateRef>>>,
    pub(crate) to: Option<Opt<Vec<StateRef>>>,
    pub(crate) table: Option<Opt<LitStr>>,
    pub(crate) key: Option<Opt<Expr>>,
    pub(crate) key_column: Option<Opt<LitStr>>,
    pub(crate) tx: Option<Opt<Ident>>,
    pub(crate) state_column: Option<Opt<LitStr>>,
    pub(crate) version_column: Option<Opt<LitStr>>,
    pub(crate) savepoint: Option<Opt<syn::LitBool>>,
    pub(crate) handle: Option<Opt<Expr>>,
    pub(crate) krate: Option<Opt<LitStr>>,
}

/// Reads the attribute arguments against `table`, recording problems.
pub(crate) fn parse(table: &Table, tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    let mut a = Args::default();
    args::parse(table, tokens, errors, |arg| {
        let name = arg.name().to_owned();
        if !table.options.contains(&name.as_str()) {
            return arg.unknown();
        }
        match name.as_str() {
            "machine" => arg.set(&mut a.machine, type_path),
            "from" => arg.set(&mut a.from, states),
            "to" => arg.set(&mut a.to, states),
            "table" => arg.set(&mut a.table, read::string),
            "key" => arg.set(&mut a.key, read::expr),
            "key_column" => arg.set(&mut a.key_column, read::string),
            "tx" => arg.set(&mut a.tx, read::param),
            "state_column" => arg.set(&mut a.state_column, read::string),
            "version_column" => arg.set(&mut a.version_column, read::string),
            "savepoint" => arg.set(&mut a.savepoint, read::boolean),
            "handle" => arg.set(&mut a.handle, read::expr),
            "crate" => arg.set(&mut a.krate, read::string),
            _ => arg.unknown(),
        }
    });
    a
}

/// `machine = OrderStatus` (a type path).
fn type_path(value: &Expr, name: &str) -> syn::Result<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() => Ok(p.path.clone()),
        other => Err(syn::Error::new(
            other.span(),
            format!("expected the machine's enum: `{name} = OrderStatus`"),
        )),
    }
}

/// `WaitPay`, `"WAIT_PAY"` or `[A, "B"]`.
fn states(value: &Expr, name: &str) -> syn::Result<Vec<StateRef>> {
    let one = |e: &Expr| match e {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => Ok(
            StateRef::Variant(p.path.get_ident().cloned().expect("checked")),
        ),
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Ok(StateRef::Stored(s.clone())),
            other => Err(syn::Error::new(other.span(), shape(name))),
        },
        other => Err(syn::Error::new_spanned(other, shape(name))),
    };
    match value {
        Expr::Array(ExprArray { elems, .. }) if name == "from" => {
            if elems.is_empty() {
                return Err(syn::Error::new_spanned(
                    value,
                    "`from = []` names no state; give at least one",
                ));
            }
            elems.iter().map(one).collect()
        }
        other => one(other).map(|s| vec![s]),
    }
}

fn shape(name: &str) -> String {
    if name == "from" {
        "expected a state: `from = WaitPay`, `from = \"WAIT_PAY\"` or `from = [WaitPay, Refunding]`"
            .to_owned()
    } else {
        format!("expected one state: `{name} = PaySuccess` or `{name} = \"PAY_SUCCESS\"`")
    }
}

impl Args {
    /// Fills every option `self` lacks from `shared` (the impl's attribute):
    /// a method's own setting wins.
    pub(crate) fn inherit(&mut self, shared: &Args) {
        fn fill<T: Clone>(mine: &mut Option<Opt<T>>, theirs: &Option<Opt<T>>) {
            if mine.is_none()
                && let Some(o) = theirs
            {
                *mine = Some(Opt {
                    name: o.name.clone(),
                    value: o.value.clone(),
                });
            }
        }
        fill(&mut self.machine, &shared.machine);
        fill(&mut self.table, &shared.table);
        fill(&mut self.key, &shared.key);
        fill(&mut self.key_column, &shared.key_column);
        fill(&mut self.tx, &shared.tx);
        fill(&mut self.state_column, &shared.state_column);
        fill(&mut self.version_column, &shared.version_column);
        fill(&mut self.savepoint, &shared.savepoint);
        fill(&mut self.handle, &shared.handle);
        fill(&mut self.krate, &shared.krate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn reads_states_in_every_form() {
        let mut errors = Errors::default();
        let a = parse(
            &TABLE,
            quote!(
                machine = OrderStatus,
                from = [WaitPay, "REFUNDING"],
                to = "PAY_SUCCESS",
                table = "t",
                key = cmd.order_no,
                key_column = "k"
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
        let from = a.from.unwrap().value;
        assert!(matches!(&from[0], StateRef::Variant(i) if i == "WaitPay"));
        assert!(matches!(&from[1], StateRef::Stored(s) if s.value() == "REFUNDING"));
        assert!(matches!(&a.to.unwrap().value[0], StateRef::Stored(_)));
    }

    #[test]
    fn rejects_wrong_shapes_and_edge_options_on_the_impl() {
        let mut errors = Errors::default();
        parse(
            &TABLE,
            quote!(to = [A, B], from = 3, tabl = "t"),
            &mut errors,
        );
        let e = errors.into_compile_errors().to_string();
        assert!(e.contains("expected one state"), "{e}");
        assert!(e.contains("expected a state"), "{e}");
        assert!(e.contains("did you mean `table`?"), "{e}");
        let mut errors = Errors::default();
        parse(&SHARED, quote!(machine = M, from = A), &mut errors);
        let e = errors.into_compile_errors().to_string();
        assert!(
            e.contains("unknown option `from` in `#[transitions]`"),
            "{e}"
        );
    }
}
