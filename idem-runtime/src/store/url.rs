//! Store URLs as error messages and logs show them.

/// `url` with its password (everything between `://` and the last `@`)
/// replaced by `***`: `redis://:secret@db:6379/0` becomes
/// `redis://***@db:6379/0`. Start-up errors name the store's URL this way.
///
/// ```
/// assert_eq!(idem::store::redact_url("postgres://app:pw@db/test"), "postgres://***@db/test");
/// assert_eq!(idem::store::redact_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
/// ```
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***{}", &url[..s], &url[at..]),
        _ => url.to_owned(),
    }
}

/// A start-up step's error (connecting, loading scripts, migrating) as the
/// operator reads it: which store, at which URL (password hidden), what
/// happened, and what to check. Keeps the kind and the driver error.
#[cfg(any(feature = "redis", feature = "sql"))]
pub(crate) fn at_startup(store: &str, url: &str, e: super::StoreError) -> super::StoreError {
    let check = match e {
        super::StoreError::Unavailable(_) => {
            "check that the server is running and reachable from this host, and the host, \
             port and credentials in the URL"
        }
        _ => "check the URL (scheme, host, database, credentials) and the store's options",
    };
    let url = redact_url(url);
    e.map_text(|text| format!("{store} at `{url}`: {text}; {check}"))
}
