//! Key templates: literal text plus `<param>` or `<param.field.field>`
//! placeholders, e.g. `order-create:<user_id>:<cmd.req_id>`.
//!
//! Rules, so that distinct argument tuples never render the same key (values
//! are escaped at run time; `:` only ever comes from the template):
//! - the template starts with a literal scene (`order-create:`);
//! - every placeholder directly follows a `:`;
//! - literal text has no `*`, `?`, `%`, whitespace or braces (glob patterns,
//!   escapes and Redis Cluster hash tags must stay unambiguous).

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Text copied into the key as written.
    Lit(String),
    /// A parameter, or a field path into one.
    Param {
        /// The parameter name.
        root: String,
        /// Field accesses after it (`cmd.req.id` → `["req", "id"]`).
        fields: Vec<String>,
    },
}

/// A parsed key template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pub(crate) segments: Vec<Segment>,
}

impl Template {
    /// The literal prefix before the first placeholder, without its trailing `:`.
    pub(crate) fn scene(&self) -> &str {
        match self.segments.first() {
            Some(Segment::Lit(s)) => s.trim_end_matches(':'),
            _ => "",
        }
    }

    /// The placeholders' (root, fields), in order.
    pub(crate) fn params(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param { root, fields } => Some((root.as_str(), fields.as_slice())),
            Segment::Lit(_) => None,
        })
    }
}

/// Parses a template, returning every problem found (messages for the literal's
/// span) besides the best-effort parse, so placeholders are still checked.
pub(crate) fn parse(text: &str) -> (Template, Vec<String>) {
    let mut errors = Vec::new();
    let mut segments = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    let mut bad_chars: Vec<char> = Vec::new();
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let Some(end) = rest.find('>') else {
                    errors.push(format!(
                        "unclosed placeholder `{rest}` in key template; expected `>` after the parameter name"
                    ));
                    rest = "";
                    break;
                };
                let inner = &rest[1..end];
                if let Some(nested) = inner.find('<') {
                    errors.push(format!(
                        "unclosed placeholder `{}` in key template; expected `>` after the parameter name",
                        &rest[..=nested]
                    ));
                    rest = &rest[1 + nested..];
                    continue;
                }
                if !lit.is_empty() {
                    segments.push(Segment::Lit(std::mem::take(&mut lit)));
                }
                match placeholder(inner) {
                    Ok(seg) => segments.push(seg),
                    Err(e) => errors.push(e),
                }
                rest = &rest[end + 1..];
            }
            '>' => {
                errors.push(
                    "unmatched `>` in key template; placeholders are written `<param>`".to_owned(),
                );
                rest = &rest[1..];
            }
            c => {
                if (c == '*'
                    || c == '?'
                    || c == '%'
                    || c == '{'
                    || c == '}'
                    || c.is_whitespace()
                    || c.is_control())
                    && !bad_chars.contains(&c)
                {
                    bad_chars.push(c);
                    errors.push(format!(
                        "{} is not allowed in the literal text of a key template; \
                         use letters, digits, `-`, `_`, `.` and `:` separators",
                        describe(c)
                    ));
                }
                lit.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    debug_assert!(rest.is_empty());
    if !lit.is_empty() {
        segments.push(Segment::Lit(lit));
    }
    let template = Template { segments };
    if text.is_empty() {
        errors.push(
            "empty key template; expected a scene and placeholders, e.g. `order-create:<order_id>`"
                .into(),
        );
    } else if template.params().next().is_none() && errors.is_empty() {
        errors.push(format!(
            "key template `{text}` has no placeholder, so every call would share one key; \
             add a parameter, e.g. `{}:<id>`",
            text.trim_end_matches(':')
        ));
    }
    match template.segments.first() {
        Some(Segment::Param { .. }) => errors.push(format!(
            "key template `{text}` must start with a literal scene prefix, e.g. `order-create:{text}`"
        )),
        Some(Segment::Lit(s)) if s.trim_end_matches(':').is_empty() => errors.push(format!(
            "key template `{text}` must start with a literal scene prefix before `:`, e.g. `order-create{text}`"
        )),
        _ => {}
    }
    for pair in template.segments.windows(2) {
        if let (prev, Segment::Param { root, fields }) = (&pair[0], &pair[1]) {
            let after_colon = matches!(prev, Segment::Lit(s) if s.ends_with(':'));
            if !after_colon {
                let name = std::iter::once(root.as_str())
                    .chain(fields.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(".");
                errors.push(format!(
                    "placeholder `<{name}>` must follow a `:` separator, so distinct values cannot render the same key"
                ));
            }
        }
    }
    (template, errors)
}

/// A value option written as one placeholder, `"<msg.id>"`
/// (`#[consume_once(msg_id = ..)]`): no scene, no literal text, since the
/// value is a key part of its own.
pub(crate) fn single_placeholder(text: &str) -> Result<Segment, String> {
    let inner = text
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .filter(|t| !t.contains(['<', '>']));
    match inner {
        Some(inner) => placeholder(inner),
        None => Err(format!(
            "expected one placeholder such as `\"<msg.id>\"`, got `{text}`"
        )),
    }
}

fn placeholder(inner: &str) -> Result<Segment, String> {
    if inner.trim().is_empty() {
        return Err(
            "empty placeholder `<>` in key template; expected a parameter name, e.g. `<order_id>`"
                .into(),
        );
    }
    let mut parts = inner.split('.');
    let root = parts.next().unwrap_or_default();
    let fields: Vec<&str> = parts.collect();
    let valid_root = is_ident(root);
    let valid_fields = fields.iter().all(|f| {
        (is_ident(f) && *f != "self") || (!f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
    });
    if !valid_root || !valid_fields {
        return Err(format!(
            "invalid placeholder `<{inner}>` in key template; expected a parameter name or a field path such as `<cmd.order_no>`"
        ));
    }
    Ok(Segment::Param {
        root: root.to_owned(),
        fields: fields.into_iter().map(str::to_owned).collect(),
    })
}

/// A plain (non-keyword, non-raw) Rust identifier, as the lexer sees it; `self`
/// is allowed as a root so methods can use `<self.field>`.
fn is_ident(s: &str) -> bool {
    s == "self" || syn::parse_str::<syn::Ident>(s).is_ok_and(|i| i != "_" && i == s)
}

fn describe(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        '\t' => "a tab".into(),
        c if c.is_whitespace() || c.is_control() => format!("the character {c:?}"),
        c => format!("`{c}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(root: &str, fields: &[&str]) -> Segment {
        Segment::Param {
            root: root.into(),
            fields: fields.iter().map(|f| (*f).into()).collect(),
        }
    }
    fn l(s: &str) -> Segment {
        Segment::Lit(s.into())
    }
    fn ok(text: &str) -> Template {
        let (t, errors) = parse(text);
        assert!(errors.is_empty(), "{errors:?}");
        t
    }
    fn err(text: &str) -> String {
        let (_, errors) = parse(text);
        assert!(!errors.is_empty(), "{text:?} accepted");
        errors.join("\n")
    }

    #[test]
    fn parses_literals_and_placeholders() {
        let t = ok("order-create:<user_id>:<cmd.req.0>:v2");
        assert_eq!(
            t.segments,
            vec![
                l("order-create:"),
                p("user_id", &[]),
                l(":"),
                p("cmd", &["req", "0"]),
                l(":v2")
            ]
        );
        assert_eq!(t.scene(), "order-create");
        assert_eq!(ok("a.b:c:<x>").scene(), "a.b:c");
    }

    #[test]
    fn reports_placeholder_errors() {
        assert!(err("a:<>").contains("empty placeholder"));
        assert!(err("a:<id").contains("unclosed placeholder `<id`"));
        assert!(err("a:<id:<b>").contains("unclosed placeholder"));
        assert!(err("a:id>").contains("unmatched `>`"));
        assert!(err("a:<user-id>").contains("invalid placeholder `<user-id>`"));
        assert!(err("a:<b.>").contains("invalid placeholder"));
        assert!(err("a:<type>").contains("invalid placeholder"));
        assert!(err("a:<b.self>").contains("invalid placeholder"));
        assert!(err("a:<\u{345}x>").contains("invalid placeholder"));
        assert_eq!(ok("a:<self.id>").params().count(), 1);
    }

    #[test]
    fn reports_structure_errors() {
        assert!(err("order-create").contains("has no placeholder"));
        assert!(err("<id>").contains("must start with a literal scene prefix"));
        assert!(err(":<id>").contains("must start with a literal scene prefix"));
        assert!(err("a:<x><y>").contains("`<y>` must follow a `:`"));
        assert!(err("order<id>").contains("`<id>` must follow a `:`"));
        assert!(err("").contains("empty key template"));
    }

    #[test]
    fn rejects_glob_whitespace_and_braces_once_each() {
        let (t, e) = parse("a*b?c d{e}:**:<id>");
        assert_eq!(t.params().count(), 1);
        assert_eq!(e.len(), 5, "{e:?}");
        assert!(e[0].contains("`*` is not allowed"));
        assert!(e[2].contains("a space"));
        assert!(err("a%:<id>").contains("`%`"));
    }
}
