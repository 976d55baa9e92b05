//! Exit codes and errors as the operator reads them: every message goes
//! through [`redact_in`], so a store URL's password never reaches a terminal
//! or a CI log.

/// Success; for `verify`, the store passed every check.
pub(crate) const OK: u8 = 0;
/// The answer is "no": `verify` found a problem, `forget` refused a live
/// claim or found nothing, `inspect` found no record.
pub(crate) const NO: u8 = 1;
/// Usage: bad arguments, no store given, an unknown URL scheme.
pub(crate) const USAGE: u8 = 2;
/// The store is unreachable (connecting, I/O, timeout).
pub(crate) const UNREACHABLE: u8 = 3;
/// Any other error (a value idem cannot decode, a refused command, …).
pub(crate) const OTHER: u8 = 4;

/// A failed command: its exit code and message.
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Fail {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Fail {
            code,
            message: message.into(),
        }
    }

    /// A store error: unreachable (3) or other (4).
    pub(crate) fn store(what: &str, e: idem::store::StoreError) -> Self {
        let code = match e {
            idem::store::StoreError::Unavailable(_) => UNREACHABLE,
            _ => OTHER,
        };
        Fail::new(code, format!("{what}: {e}"))
    }

    /// A store that could not be opened: unreachable (3) when the server is
    /// down or refuses the credentials, missing or wrong alike; usage (2)
    /// when the URL or an option is malformed; other (4) otherwise.
    pub(crate) fn connect(e: idem::store::StoreError) -> Self {
        use idem::store::StoreError;
        let text = e.to_string();
        let auth = ["NOAUTH", "WRONGPASS", "uthentication", "password"]
            .iter()
            .any(|w| text.contains(w));
        let code = match e {
            StoreError::Unavailable(_) => UNREACHABLE,
            StoreError::Config(_) if auth => UNREACHABLE,
            StoreError::Config(_) => USAGE,
            _ => OTHER,
        };
        Fail::new(code, format!("cannot open the store: {text}"))
    }

    /// The exit code's class, as `--json` errors name it.
    pub(crate) fn class(&self) -> &'static str {
        match self.code {
            NO => "no",
            USAGE => "usage",
            UNREACHABLE => "unreachable",
            _ => "other",
        }
    }

    /// An `idem::Error` of a handle call.
    pub(crate) fn idem(what: &str, e: idem::Error) -> Self {
        let code = match e {
            idem::Error::StoreUnavailable { .. } => UNREACHABLE,
            idem::Error::Verify(_) => NO,
            _ => OTHER,
        };
        Fail::new(code, format!("{what}: {e}"))
    }
}

/// `text` with `url`'s password (and the URL itself) masked: the URL as
/// `idem::store::redact_url` shows it, and the bare password anywhere else.
pub(crate) fn redact_in(text: &str, url: &str) -> String {
    let mut out = text.to_owned();
    for one in url.split(',') {
        if one.is_empty() {
            continue;
        }
        out = out.replace(one, &idem::store::redact_url(one));
        if let Some(pw) = password(one) {
            out = out.replace(pw, "***");
        }
    }
    out
}

/// The password of `scheme://user:password@host…`, if any.
fn password(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let userinfo = &rest[..rest.rfind('@')?];
    let pw = userinfo.split_once(':')?.1;
    (pw.len() >= 3).then_some(pw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive() {
        let url = "postgres://app:s3cret@db:5432/x";
        let text = format!("connect to {url} failed: password s3cret rejected");
        let shown = redact_in(&text, url);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("postgres://***@db:5432/x"), "{shown}");
        assert_eq!(redact_in("plain", "redis://127.0.0.1:6379"), "plain");
    }
}
