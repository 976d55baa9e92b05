//! The option table of `#[distributed_lock]`.

use syn::{Expr, LitStr};

use crate::common::args::{self, Opt, Table, read};
use crate::common::duration::DurationArg;
use crate::common::errors::Errors;

/// The macro's name and every option, in documentation order.
pub(crate) const TABLE: Table = Table {
    name: "distributed_lock",
    options: &["key", "lease", "wait", "max_hold", "handle", "crate"],
};

/// The arguments as written.
#[derive(Default, Debug)]
pub(crate) struct Args {
    pub(crate) key: Option<Opt<LitStr>>,
    pub(crate) lease: Option<Opt<DurationArg>>,
    pub(crate) wait: Option<Opt<DurationArg>>,
    pub(crate) max_hold: Option<Opt<DurationArg>>,
    pub(crate) handle: Option<Opt<Expr>>,
    pub(crate) krate: Option<Opt<LitStr>>,
}

/// Reads the attribute arguments, recording problems in `errors`.
pub(crate) fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    let mut a = Args::default();
    args::parse(&TABLE, tokens, errors, |arg| match arg.name() {
        "key" => arg.set(&mut a.key, read::string),
        "lease" => arg.set(&mut a.lease, read::duration),
        "wait" => arg.set(&mut a.wait, read::duration),
        "max_hold" => arg.set(&mut a.max_hold, read::duration),
        "handle" => arg.set(&mut a.handle, read::expr),
        "crate" => arg.set(&mut a.krate, read::string),
        _ => arg.unknown(),
    });
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn reads_options_and_suggests_names() {
        let mut errors = Errors::default();
        let a = parse(
            quote!(
                key = "lock:o:<id>",
                lease = "3s",
                wait = "500ms",
                max_hold = "60s",
                handle = &H
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(
            a.lease.unwrap().value.get(&mut Errors::default()),
            Some(std::time::Duration::from_secs(3))
        );
        assert!(a.wait.is_some() && a.max_hold.is_some() && a.handle.is_some());
        let mut errors = Errors::default();
        parse(quote!(key = "lock:o:<id>", ttl = "1h"), &mut errors);
        let e = errors.into_compile_errors().to_string();
        assert!(
            e.contains("unknown option `ttl` in `#[distributed_lock]`"),
            "{e}"
        );
    }
}
