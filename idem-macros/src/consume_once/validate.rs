//! Whether a `#[consume_once]` makes sense before any code is generated: an
//! `async fn` returning a `Result`, `msg_id` (and `biz_id`) naming a parameter
//! or a field of one, the transaction parameter, a log table that can be
//! spliced into SQL, a retention that parses.

use std::time::Duration;

use proc_macro2::Span;
use syn::{Expr, Ident, LitStr, Path, Type};

use super::args::{Args, TABLE};
use crate::common::args::crate_path;
use crate::common::errors::Errors;
use crate::common::item::{self, ItemFn};
use crate::common::key::{self, KeyPiece};
use crate::common::params::{self, Params};

/// A checked consumer, ready for `codegen.rs`.
pub(crate) struct Plan<'a> {
    pub(crate) item: &'a ItemFn,
    pub(crate) ret: &'a Type,
    pub(crate) krate: Option<Path>,
    pub(crate) msg_id: KeyPiece,
    pub(crate) biz_id: Option<KeyPiece>,
    pub(crate) tx: Ident,
    /// The consumer name: as written, else the function's name.
    pub(crate) consumer: String,
    /// The message type: as written, else the consumer.
    pub(crate) msg_type: String,
    pub(crate) log: Option<LitStr>,
    pub(crate) retention: Option<Duration>,
    /// `savepoint = false`: no savepoint around the insert and the body.
    pub(crate) savepoint: bool,
    pub(crate) handle: Option<Expr>,
}

/// Longest log table name (the runtime's `check_log_table` bound: its index
/// names add 12 bytes to it).
const MAX_LOG_TABLE: usize = 51;

/// Checks `args` against `item`; `None` when something is missing or wrong.
pub(crate) fn validate<'a>(args: Args, item: &'a ItemFn, errors: &mut Errors) -> Option<Plan<'a>> {
    item::require_async(&TABLE, &item.sig, errors);
    let ret = item::wrapped_result_type(&TABLE, &item.sig, "Consumed", errors);
    let params = Params::of(item, errors);
    let at = item.sig.ident.span();
    let msg_id = match &args.msg_id {
        Some(o) => key::resolve_value(&o.value, &params, "msg_id", errors),
        None => {
            errors.missing(
                "msg_id",
                Span::call_site(),
                "missing `msg_id` in `#[consume_once]`; e.g. `#[consume_once(msg_id = \"<msg.id>\", biz_id = \"<msg.order_no>\")]`",
            );
            None
        }
    };
    let biz_id = args
        .biz_id
        .as_ref()
        .map(|o| key::resolve_value(&o.value, &params, "biz_id", errors));
    let tx = params::transaction(&TABLE, args.tx, &params, at, errors);
    for o in [&args.consumer, &args.msg_type].into_iter().flatten() {
        name_literal(&o.value, errors);
    }
    if let Some(o) = &args.log {
        table_literal(&o.value, errors);
    }
    let retention = args.retention.as_ref().and_then(|o| o.value.get(errors));
    let krate = crate_path(args.krate.as_ref(), errors);
    if !errors.is_empty() {
        return None;
    }
    let consumer = args
        .consumer
        .map_or_else(|| item.sig.ident.to_string(), |o| o.value.value());
    let msg_type = args
        .msg_type
        .map_or_else(|| consumer.clone(), |o| o.value.value());
    Some(Plan {
        item,
        ret: ret?,
        krate,
        msg_id: msg_id?,
        biz_id: match biz_id {
            Some(b) => Some(b?),
            None => None,
        },
        tx: tx?,
        consumer,
        msg_type,
        log: args.log.map(|o| o.value),
        retention,
        savepoint: args.savepoint.as_ref().is_none_or(|o| o.value.value),
        handle: args.handle.map(|o| o.value),
    })
}

/// `consumer` and `msg_type` become key scenes: non-empty, no whitespace.
fn name_literal(lit: &LitStr, errors: &mut Errors) {
    let v = lit.value();
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        errors.at(
            lit.span(),
            format!("`{v}` is not a usable name: expected non-empty text without whitespace, e.g. `refund-service`"),
        );
    }
}

/// The log table is spliced into SQL: a plain identifier short enough for the
/// index names derived from it (reserved words are refused by the runtime's
/// check, which knows every dialect's list).
fn table_literal(lit: &LitStr, errors: &mut Errors) {
    let v = lit.value();
    let mut chars = v.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && v.len() <= MAX_LOG_TABLE;
    if !plain {
        errors.at(
            lit.span(),
            format!("`{v}` is not a usable log table name (letters, digits, `_`, at most {MAX_LOG_TABLE} bytes)"),
        );
    }
}
