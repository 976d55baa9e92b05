//! The option table of `#[consume_once]`.

use syn::{Expr, Ident, LitStr};

use crate::common::args::{self, Opt, Table, read};
use crate::common::duration::DurationLit;
use crate::common::errors::Errors;

/// The macro's name and every option, in documentation order.
pub(crate) const TABLE: Table = Table {
    name: "consume_once",
    options: &[
        "msg_id",
        "biz_id",
        "tx",
        "consumer",
        "msg_type",
        "log",
        "retention",
        "savepoint",
        "handle",
        "crate",
    ],
};

/// The arguments as written.
#[derive(Default, Debug)]
pub(crate) struct Args {
    pub(crate) msg_id: Option<Opt<LitStr>>,
    pub(crate) biz_id: Option<Opt<LitStr>>,
    pub(crate) tx: Option<Opt<Ident>>,
    pub(crate) consumer: Option<Opt<LitStr>>,
    pub(crate) msg_type: Option<Opt<LitStr>>,
    pub(crate) log: Option<Opt<LitStr>>,
    pub(crate) retention: Option<Opt<DurationLit>>,
    pub(crate) savepoint: Option<Opt<syn::LitBool>>,
    pub(crate) handle: Option<Opt<Expr>>,
    pub(crate) krate: Option<Opt<LitStr>>,
}

/// Reads the attribute arguments, recording problems in `errors`.
pub(crate) fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
    let mut a = Args::default();
    args::parse(&TABLE, tokens, errors, |arg| match arg.name() {
        "msg_id" => arg.set(&mut a.msg_id, read::string),
        "biz_id" => arg.set(&mut a.biz_id, read::string),
        "tx" => arg.set(&mut a.tx, read::param),
        "consumer" => arg.set(&mut a.consumer, read::string),
        "msg_type" => arg.set(&mut a.msg_type, read::string),
        "log" => arg.set(&mut a.log, read::string),
        "retention" => arg.set(&mut a.retention, read::duration_lit),
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
    use quote::quote;

    #[test]
    fn reads_options_and_suggests_names() {
        let mut errors = Errors::default();
        let a = parse(
            quote!(
                msg_id = "<msg.id>",
                biz_id = "<msg.order_no>",
                tx = tx,
                retention = "3d"
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(a.msg_id.unwrap().value.value(), "<msg.id>");
        assert!(a.biz_id.is_some() && a.tx.is_some() && a.retention.is_some());
        let mut errors = Errors::default();
        parse(quote!(msg_id = "<m.id>", bizid = "<m.o>"), &mut errors);
        let e = errors.into_compile_errors().to_string();
        assert!(
            e.contains("unknown option `bizid` in `#[consume_once]`"),
            "{e}"
        );
        assert!(e.contains("did you mean `biz_id`"), "{e}");
    }
}
