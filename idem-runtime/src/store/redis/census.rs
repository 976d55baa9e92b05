//! The census of a Redis store (`Store::census`): `SCAN` for the record keys
//! of a namespace (`<prefix>{<namespace>:…}`), then the first byte of each
//! value (`GETRANGE … 0 0`, pipelined per batch), which tells an in-progress
//! claim from a finished record and skips tokens and states (their values
//! never start with a record's state byte: tokens start with `I` or `C`, states
//! are UTF-8 text, where 0xC1 and 0xD1 cannot come first). Redis expires
//! records itself, so nothing is ever counted as expired. The single-node
//! store scans its server; the cluster store scans every master.

use redis::Value as Reply;
use redis::aio::ConnectionLike;

use super::codec::{DONE, KeyLayout, PENDING};
pub(super) use super::errors::{map_err, unexpected};
use crate::store::census::{Counted, count_keys};
use crate::store::{Census, StoreError};

/// Keys asked for per `SCAN` step.
const SCAN_COUNT: usize = 1_000;

/// The `SCAN MATCH` pattern of a namespace's record keys, glob characters of
/// the prefix and namespace escaped.
pub(super) fn pattern(layout: &KeyLayout, namespace: &str) -> String {
    pattern_for(layout, &crate::key::namespace_prefix(namespace))
}

/// The `SCAN MATCH` pattern of the record keys whose idem key starts with
/// `key_prefix`.
pub(super) fn pattern_for(layout: &KeyLayout, key_prefix: &str) -> String {
    let mut p = String::new();
    for c in layout.record_key_str(key_prefix).chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    // `record_key_str` closed the hash tag: reopen it for "anything after".
    p.pop();
    p.push('*');
    p
}

/// One `SCAN cursor MATCH pattern COUNT n` command.
pub(super) fn scan_cmd(cursor: u64, pattern: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SCAN");
    cmd.arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(SCAN_COUNT);
    cmd
}

/// A `SCAN` reply: the next cursor and the keys of this step.
pub(super) fn scan_reply(r: Reply) -> Result<(u64, Vec<Vec<u8>>), StoreError> {
    let (cursor, keys): (String, Vec<Vec<u8>>) =
        redis::FromRedisValue::from_redis_value(r.clone()).map_err(|_| unexpected("SCAN", &r))?;
    let cursor = cursor
        .parse()
        .map_err(|_| StoreError::codec(format!("SCAN returned the cursor `{cursor}`")))?;
    Ok((cursor, keys))
}

/// Adds the records among `keys` (idem keys in `<prefix>{…}` form) to `out`:
/// one `GETRANGE` per key, pipelined on one server (`pipelined`); a cluster
/// sends each on its own, since one pipeline may not cross slots. Keys gone
/// meanwhile read as empty.
pub(super) async fn classify<C: ConnectionLike>(
    con: &mut C,
    layout: &KeyLayout,
    keys: Vec<Vec<u8>>,
    pipelined: bool,
    out: &mut Vec<(String, Counted)>,
) -> Result<(), StoreError> {
    let first = |k: &[u8]| {
        let mut cmd = redis::cmd("GETRANGE");
        cmd.arg(k).arg(0).arg(0);
        cmd
    };
    let firsts: Vec<Vec<u8>> = if keys.is_empty() {
        Vec::new()
    } else if pipelined {
        let mut pipe = redis::pipe();
        for k in &keys {
            pipe.add_command(first(k));
        }
        pipe.query_async(con).await.map_err(map_err)?
    } else {
        let mut v = Vec::with_capacity(keys.len());
        for k in &keys {
            v.push(first(k).query_async(con).await.map_err(map_err)?);
        }
        v
    };
    for (k, first) in keys.iter().zip(firsts) {
        let state = match first.first() {
            Some(&PENDING) => Counted::InProgress,
            Some(&DONE) => Counted::Done,
            _ => continue,
        };
        if let Some(key) = layout.idem_key(k) {
            out.push((key.to_owned(), state));
        }
    }
    Ok(())
}

/// The census of the records `classify` collected.
pub(super) fn census(namespace: &str, found: &[(String, Counted)]) -> Census {
    count_keys(namespace, found.iter().map(|(k, s)| (k.as_str(), *s)))
}

/// Scans one server (the single-node store) to the end.
pub(super) async fn scan_node<C: ConnectionLike>(
    con: &mut C,
    layout: &KeyLayout,
    pattern: &str,
    out: &mut Vec<(String, Counted)>,
) -> Result<(), StoreError> {
    let mut cursor = 0;
    loop {
        let reply = con
            .req_packed_command(&scan_cmd(cursor, pattern))
            .await
            .map_err(map_err)?;
        let (next, keys) = scan_reply(reply)?;
        classify(con, layout, keys, true, out).await?;
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
