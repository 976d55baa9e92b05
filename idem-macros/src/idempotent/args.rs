//! The option table of `#[idempotent]`: which names it takes and how each value
//! is read (the kit in `common/args.rs` does the parsing and the messages).

use syn::{Expr, Ident, LitInt, LitStr, Path};

use crate::common::args::{self, Opt, Table, read};
use crate::common::duration::DurationArg;
use crate::common::errors::Errors;

/// The macro's name and every option, in documentation order.
pub(crate) const TABLE: Table = Table {
    name: "idempotent",
    options: &[
        "key",
        "ttl",
        "lease",
        "wait",
        "max_hold",
        "concurrent",
        "fingerprint",
        "version",
        "backstop",
        "on_conflict",
        "degrade",
        "terminal",
        "token",
        "tx",
        "savepoint",
        "handle",
        "crate",
    ],
};

/// The arguments as written.
#[derive(Default, Debug)]
pub(crate) struct Args {
    pub(crate) key: Option<Opt<LitStr>>,
    pub(crate) ttl: Option<Opt<DurationArg>>,
    pub(crate) lease: Option<Opt<DurationArg>>,
    pub(crate) wait: Option<Opt<DurationArg>>,
    pub(crate) max_hold: Option<Opt<DurationArg>>,
    pub(crate) concurrent: Option<Opt<LitStr>>,
    pub(crate) fingerprint: Option<Opt<Vec<Ident>>>,
    pub(crate) version: Option<Opt<LitInt>>,
    pub(crate) backstop: Option<Opt<LitStr>>,
    pub(crate) on_conflict: Option<Opt<Path>>,
    pub(crate) degrade: Option<Opt<LitStr>>,
    pub(crate) terminal: Option<Opt<Path>>,
    pub(crate) token: Option<Opt<LitStr>>,
    pub(crate) tx: Option<Opt<Ident>>,
    pub(crate) savepoint: Option<Opt<syn::LitBool>>,
    pub(crate) handle: Option<Opt<Expr>>,
    pub(crate) krate: Option<Opt<LitStr>>,
}

/// Reads the attribute arguments, recording problems in `errors`.
pub(crate) fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    let mut a = Args::default();
    args::parse(&TABLE, tokens, errors, |arg| match arg.name() {
        "key" => arg.set(&mut a.key, read::string),
        "ttl" => arg.set(&mut a.ttl, read::duration),
        "lease" => arg.set(&mut a.lease, read::duration),
        "wait" => arg.set(&mut a.wait, read::duration),
        "max_hold" => arg.set(&mut a.max_hold, read::duration),
        "concurrent" => arg.set(&mut a.concurrent, read::string),
        "fingerprint" => arg.set(&mut a.fingerprint, read::idents),
        "version" => arg.set(&mut a.version, read::int),
        "backstop" => arg.set(&mut a.backstop, read::string),
        "on_conflict" => arg.set(&mut a.on_conflict, read::path),
        "degrade" => arg.set(&mut a.degrade, read::string),
        "terminal" => arg.set(&mut a.terminal, read::path),
        "token" => arg.set(&mut a.token, read::string),
        "tx" => arg.set(&mut a.tx, read::param),
        "savepoint" => arg.set(&mut a.savepoint, read::boolean),
        "handle" => arg.set(&mut a.handle, read::expr),
        "crate" => arg.set(&mut a.krate, read::string),
        _ => arg.unknown(),
    });
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn messages(tokens: TokenStream) -> (Args, String) {
        let mut errors = Errors::default();
        let args = parse(tokens, &mut errors);
        (args, errors.into_compile_errors().to_string())
    }

    #[test]
    fn reads_every_option() {
        let (a, e) = messages(quote!(
            key = "k:<a>",
            ttl = "1h",
            lease = "1s",
            wait = "2s",
            max_hold = "10m",
            concurrent = "reject",
            fingerprint = [a, b],
            version = 3,
            backstop = "uk",
            on_conflict = find,
            degrade = "backstop",
            terminal = crate::is_final,
            handle = &IDEM,
            crate = "::idem"
        ));
        assert_eq!(e, "");
        assert_eq!(a.key.unwrap().value.value(), "k:<a>");
        assert_eq!(
            a.max_hold.unwrap().value.get(&mut Errors::default()),
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(a.fingerprint.unwrap().value.len(), 2);
        assert_eq!(a.version.unwrap().value.base10_digits(), "3");
        assert!(a.terminal.is_some() && a.handle.is_some() && a.krate.is_some());
    }

    #[test]
    fn collects_unknown_duplicate_and_wrong_kinds() {
        let (_, e) = messages(quote!(
            key = "k:<a>",
            tll = "1h",
            key = "x:<a>",
            version = "2",
            on_conflict = "f",
            max_hlod = "1m"
        ));
        assert!(e.contains("unknown option `tll` in `#[idempotent]`"), "{e}");
        assert!(e.contains("did you mean `ttl`?"), "{e}");
        assert!(e.contains("did you mean `max_hold`?"), "{e}");
        assert!(
            e.contains("duplicate option `key` in `#[idempotent]`"),
            "{e}"
        );
        assert!(e.contains("expected an integer: `version = 2`"), "{e}");
        assert!(e.contains("expected a path, not a string"), "{e}");
    }
}
