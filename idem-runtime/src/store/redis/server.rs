//! What idem reads from a Redis server about the server itself: its version
//! (the scripts need 5, the native claim 7.0) and its eviction policy (an
//! evicting policy drops records, and a dropped record runs a duplicate
//! again). Shared by the single-node and the cluster store's `verify`.

use redis::Value as Reply;

use crate::store::{StoreError, Warning};

/// Turns the `maxmemory-policy` values of the nodes into warnings: with an
/// eviction policy Redis may drop records under memory pressure, and a dropped
/// record means the next duplicate runs the body again.
pub(crate) fn policy_warnings(policies: &[String]) -> Vec<Warning> {
    policies
        .iter()
        .filter(|p| p.starts_with("allkeys-") || p.starts_with("volatile-"))
        .map(|p| {
            Warning(format!(
                "redis maxmemory-policy is `{p}`: under memory pressure Redis evicts idem records \
                 and duplicates run again silently; use `noeviction` (or a dedicated instance)"
            ))
        })
        .collect()
}

/// Collects the string leaves of a reply (CONFIG GET answers per node, in RESP2
/// arrays or RESP3 maps, possibly keyed by node address in a cluster).
pub(crate) fn strings(r: &Reply, out: &mut Vec<String>) {
    match r {
        Reply::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        Reply::SimpleString(s) => out.push(s.clone()),
        Reply::Array(items) | Reply::Set(items) => items.iter().for_each(|i| strings(i, out)),
        Reply::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        _ => {}
    }
}

/// The version in an `INFO server` text (`7.0.15`).
pub(crate) fn version(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(str::trim)
}

/// The major version in an `INFO server` text.
pub(crate) fn major_version(info: &str) -> Option<u32> {
    version(info)?.split('.').next()?.parse().ok()
}

/// What `verify()` says about a server's version: below 5 an error (the
/// scripts need effect replication), below 7.0 a warning (no native claim).
pub(crate) fn check_version(info: &str) -> Result<Option<Warning>, StoreError> {
    let (Some(v), Some(text)) = (major_version(info), version(info)) else {
        return Ok(None);
    };
    if v < 5 {
        return Err(StoreError::config(format!(
            "Redis {text} is too old: idem's scripts need Redis 5 or newer"
        )));
    }
    Ok((v < super::native::NATIVE_SINCE).then(|| {
        Warning(format!(
            "Redis {text}: `SET … NX … GET` needs Redis 7.0, so claims without a fence \
             run the claim script (about twice the server time of the native command)"
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_policies_warn() {
        let w = policy_warnings(&[
            "noeviction".into(),
            "allkeys-lru".into(),
            "volatile-ttl".into(),
        ]);
        assert_eq!(w.len(), 2);
        assert!(w[0].0.contains("allkeys-lru"));
    }

    #[test]
    fn version_is_parsed() {
        assert_eq!(
            major_version("# Server\r\nredis_version:7.0.15\r\n"),
            Some(7)
        );
        assert_eq!(major_version("nothing"), None);
    }
}
