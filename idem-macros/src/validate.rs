//! Decides whether the arguments make sense for this function and turns them
//! into a [`Plan`] for `codegen.rs`. Every problem is recorded; nothing stops at
//! the first one.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path, ReturnType, Type};

use crate::args::{Args, Opt};
use crate::duration;
use crate::errors::{Errors, one_of, suggestion};
use crate::item::{self, ItemFn};
use crate::template::{self, Segment};

const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// One piece of the key, ready to render.
pub(crate) enum KeyPiece {
    /// `.lit("...")`
    Lit(String),
    /// `.arg(&param.field)`: `param` resolves like the user's parameter, and the
    /// tokens point at the parameter's type, where rustc reports a missing field
    /// or a type that is not a key part.
    Arg {
        ident: Ident,
        fields: Vec<String>,
        at: Span,
    },
}

/// Everything codegen needs, validated.
pub(crate) struct Plan<'a> {
    pub(crate) item: &'a ItemFn,
    pub(crate) krate: TokenStream,
    pub(crate) template: String,
    pub(crate) scene: String,
    pub(crate) key: Vec<KeyPiece>,
    /// `None`: the runtime default (24h); likewise `lease` (30s) and `version` (1).
    pub(crate) ttl: Option<Duration>,
    pub(crate) lease: Option<Duration>,
    pub(crate) wait: Option<Duration>,
    pub(crate) reject: bool,
    pub(crate) version: Option<u32>,
    pub(crate) backstop: Option<LitStr>,
    pub(crate) degrade: bool,
    pub(crate) fingerprint: Vec<Ident>,
    pub(crate) on_conflict: Option<Path>,
    pub(crate) conflict_args: Vec<Ident>,
    pub(crate) terminal: Option<Path>,
    pub(crate) handle: Option<Expr>,
    pub(crate) ret: &'a Type,
    /// The `idem::Fence` parameter and whether it was declared `mut`.
    pub(crate) fence: Option<(Ident, bool)>,
}

/// Checks `args` against `item`; `None` when anything is wrong (see `errors`).
pub(crate) fn validate<'a>(args: Args, item: &'a ItemFn, errors: &mut Errors) -> Option<Plan<'a>> {
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token.span,
            "`#[idempotent]` requires an `async fn`; add `async` before `fn`",
        );
    }
    let ret = return_type(&sig.output, &sig.ident, errors);

    // Parameters: names usable in the key, the fence, the hooks' arguments.
    let params = item.params();
    let mut fence: Option<(Ident, bool)> = None;
    let mut names: Vec<(Ident, Span)> = Vec::new();
    let mut unnamed: Option<Span> = None;
    for p in &params {
        match &p.ident {
            Some(id) if item::is_fence(p.ty) && id != "self" => {
                if let Some((first, _)) = &fence {
                    errors.at(
                        id.span(),
                        format!("only one `idem::Fence` parameter is allowed; `{first}` already receives the fence"),
                    );
                } else {
                    fence = Some((id.clone(), p.mutable));
                }
            }
            Some(id) => names.push((id.clone(), type_anchor(p.ty))),
            None => unnamed = unnamed.or(Some(p.span)),
        }
    }
    let known: Vec<String> = names.iter().map(|(i, _)| i.unraw().to_string()).collect();
    let lookup = |name: &str| names.iter().find(|(i, _)| i.unraw() == name);
    let unknown_param = |name: &str, what: &str| {
        let hint = match suggestion(name, known.iter().map(String::as_str)) {
            s if !s.is_empty() => s,
            _ if known.is_empty() => "; the function has no parameters".to_owned(),
            _ => format!(
                "; the parameters are {}",
                one_of(&known.iter().map(String::as_str).collect::<Vec<_>>())
            ),
        };
        format!("unknown parameter `{name}` in {what}{hint}")
    };

    // The key template.
    let mut key = Vec::new();
    let mut template_text = String::new();
    let mut scene = String::new();
    match &args.key {
        None => errors.at(
            Span::call_site(),
            "missing `key` in `#[idempotent]`; e.g. `#[idempotent(key = \"order-create:<order_id>\")]`",
        ),
        Some(Opt { value: lit, .. }) => {
            template_text = lit.value();
            let (t, messages) = template::parse(&template_text);
            messages.into_iter().for_each(|m| errors.at(lit.span(), m));
            scene = t.scene().to_owned();
            for seg in &t.segments {
                let piece = match seg {
                    Segment::Lit(s) => Ok(KeyPiece::Lit(s.clone())),
                    Segment::Param { root, .. } if fence.as_ref().is_some_and(|(f, _)| f.unraw() == root) => Err(
                        format!("the fence parameter `{root}` cannot be part of the key: it changes on every claim"),
                    ),
                    Segment::Param { root, fields } => match lookup(root) {
                        Some((ident, ty_span)) => Ok(KeyPiece::Arg {
                            ident: ident.clone(),
                            fields: fields.clone(),
                            at: *ty_span,
                        }),
                        None => Err(unknown_param(root, "key template")),
                    },
                };
                match piece {
                    Ok(p) => key.push(p),
                    Err(m) => errors.at(lit.span(), m),
                }
            }
        }
    }

    // Durations.
    let dur = |opt: &Option<Opt<LitStr>>, errors: &mut Errors| -> Option<Duration> {
        let lit = &opt.as_ref()?.value;
        duration::parse(&lit.value())
            .map_err(|m| errors.at(lit.span(), m))
            .ok()
    };
    let ttl = dur(&args.ttl, errors);
    let lease = dur(&args.lease, errors);
    let wait = dur(&args.wait, errors);
    let (ttl_v, lease_v) = (ttl.unwrap_or(DEFAULT_TTL), lease.unwrap_or(DEFAULT_LEASE));
    let ttl_ok = args.ttl.is_none() || ttl.is_some();
    let lease_ok = args.lease.is_none() || lease.is_some();
    if ttl_ok && lease_ok && lease_v >= ttl_v {
        let (span, msg) = match (&args.lease, &args.ttl) {
            (Some(l), _) => (
                l.value.span(),
                format!(
                    "`lease` ({}) must be shorter than `ttl` ({}): a result must outlive the claim that produced it",
                    duration::display(lease_v),
                    duration::display(ttl_v)
                ),
            ),
            (None, Some(t)) => (
                t.value.span(),
                format!(
                    "`ttl` ({}) must be longer than the default `lease` (30s); set a shorter `lease` as well",
                    duration::display(ttl_v)
                ),
            ),
            (None, None) => (Span::call_site(), String::new()),
        };
        errors.at(span, msg);
    }

    // Enumerated strings.
    let reject = match &args.concurrent {
        None => false,
        Some(Opt { value, .. }) => match value.value().as_str() {
            "wait" => false,
            "reject" => true,
            other => {
                errors.at(
                    value.span(),
                    format!(
                        "invalid value `{other}` for `concurrent`; expected `\"wait\"` or `\"reject\"`{}",
                        suggestion(other, ["wait", "reject"])
                    ),
                );
                false
            }
        },
    };
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
    let degrade = match &args.degrade {
        None => false,
        Some(Opt { name, value }) => {
            if value.value() != "backstop" {
                errors.at(
                    value.span(),
                    format!(
                        "invalid value `{}` for `degrade`; the only mode is `\"backstop\"`",
                        value.value()
                    ),
                );
            } else if args.backstop.is_none() {
                errors.at(
                    name.span(),
                    "`degrade = \"backstop\"` requires `backstop = \"<unique constraint>\"`: \
                     without a constraint nothing stops duplicates while the store is down",
                );
            }
            true
        }
    };
    let fingerprint = match &args.fingerprint {
        None => Vec::new(),
        Some(Opt { name, value }) => {
            if value.is_empty() {
                errors.at(name.span(), "`fingerprint` lists no parameters; remove it or name the request payload, e.g. `fingerprint = [cmd]`");
            }
            for id in value {
                if lookup(&id.to_string()).is_none() {
                    errors.at(id.span(), unknown_param(&id.to_string(), "`fingerprint`"));
                }
            }
            value.clone()
        }
    };
    let krate = match &args.krate {
        None => quote::quote!(::idem),
        Some(Opt { value, .. }) => match value.parse::<Path>() {
            Ok(p) => p.into_token_stream(),
            Err(_) => {
                errors.at(
                    value.span(),
                    format!(
                        "`crate` must be a path such as `\"::idem\"`, not `{}`",
                        value.value()
                    ),
                );
                TokenStream::new()
            }
        },
    };
    let on_conflict = args.on_conflict.map(|o| o.value);
    if let (Some(_), Some(span)) = (&on_conflict, unnamed) {
        errors.at(
            span,
            "`on_conflict` receives every parameter by reference, so each parameter needs a plain name",
        );
    }

    let ret = ret?;
    if !errors.is_empty() {
        return None;
    }
    Some(Plan {
        item,
        krate,
        template: template_text,
        scene,
        key,
        ttl,
        lease,
        wait,
        reject,
        version,
        backstop: args.backstop.map(|o| o.value),
        degrade,
        fingerprint,
        on_conflict,
        conflict_args: names.into_iter().map(|(i, _)| i).collect(),
        terminal: args.terminal.map(|o| o.value),
        handle: args.handle.map(|o| o.value),
        ret,
        fence,
    })
}

/// The declared return type, if it can be a `Result`. Types that plainly are not
/// are reported here; aliases (`io::Result<T>`, `type Res<T> = ...`) are checked
/// by rustc through `__private::Returns`.
fn return_type<'a>(output: &'a ReturnType, name: &Ident, errors: &mut Errors) -> Option<&'a Type> {
    const NOT_RESULT: &[&str] = &[
        "Option", "Vec", "String", "Box", "bool", "char", "str", "u8", "u16", "u32", "u64", "u128",
        "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64",
    ];
    let hint = "`#[idempotent]` functions return `Result<T, E>` with `T: Serialize + DeserializeOwned` and `E: From<idem::Error>`";
    match output {
        ReturnType::Default => {
            errors.at(name.span(), format!("`{name}` returns `()`; {hint}"));
            None
        }
        ReturnType::Type(_, ty) => {
            let plain = match &**ty {
                Type::Path(p) if p.qself.is_none() => p
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| !NOT_RESULT.contains(&s.ident.to_string().as_str())),
                Type::Group(_) | Type::Paren(_) => true,
                _ => false,
            };
            if plain {
                Some(ty)
            } else {
                let shown = ty.to_token_stream().to_string();
                errors.at(
                    ty.span(),
                    format!("return type `{shown}` is not a `Result`; {hint}"),
                );
                None
            }
        }
    }
}

/// Where to report a problem with a parameter's type: its named part (`Cmd` in
/// `&Cmd`), since stable proc macros cannot span a whole type.
fn type_anchor(ty: &Type) -> Span {
    match ty {
        Type::Reference(r) => type_anchor(&r.elem),
        Type::Paren(p) => type_anchor(&p.elem),
        Type::Group(g) => type_anchor(&g.elem),
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .map_or_else(|| ty.span(), |s| s.ident.span()),
        _ => ty.span(),
    }
}
