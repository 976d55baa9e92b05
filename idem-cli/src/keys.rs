//! Which key a command means, and `ls`: the keys a store lists.
//!
//! A key is given as rendered, as the `#<hash>` the logs show (searched
//! among the namespace's live records: the hash is one-way), or as a scene
//! and parts rendered by the library's key writer.

use idem::store::{ListFilter, RecordState};
use idem::{Key, KeyPart, Store};

use crate::args::{Global, KeyArgs, StateArg};
use crate::fail::{Fail, NO, OK, USAGE};
use crate::render::{Out, shown};

/// The key of `KEY` (or its `#hash`), or of `--scene` and `--part`s under
/// `--namespace`.
pub(crate) async fn resolve(store: &dyn Store, g: &Global, k: &KeyArgs) -> Result<String, Fail> {
    match (&k.key, &k.scene) {
        (Some(key), _) if is_hash(key) => by_hash(store, g, key).await,
        (Some(key), _) => Ok(key.clone()),
        (None, scene) => {
            let parts: Vec<&(dyn KeyPart + Sync)> =
                k.parts.iter().map(|p| p as &(dyn KeyPart + Sync)).collect();
            let scene = scene.as_deref().unwrap_or_default();
            Ok(Key::from_parts(&g.namespace, scene, &parts)
                .as_str()
                .to_owned())
        }
    }
}

/// `#` and 16 hex digits: what `idem::observe::key_hash` writes.
fn is_hash(s: &str) -> bool {
    s.len() == 17 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The one live record under the namespace whose key hashes to `hash`.
async fn by_hash(store: &dyn Store, g: &Global, hash: &str) -> Result<String, Fail> {
    let all = ListFilter::default();
    let keys = store
        .list(&g.namespace, all)
        .await
        .map_err(|e| Fail::store("list", e))?;
    let mut found = keys.into_iter().map(|(k, _)| k).filter(|k| {
        idem::observe::key_hash(k)
            .to_string()
            .eq_ignore_ascii_case(hash)
    });
    match (found.next(), found.next()) {
        (Some(key), None) => Ok(key),
        (None, _) => Err(Fail::new(
            NO,
            format!(
                "no live record under namespace `{}` has the hash {hash} (it expired or was \
                 forgotten, or it is another namespace's: give -n)",
                shown(&g.namespace)
            ),
        )),
        (Some(a), Some(b)) => Err(Fail::new(
            USAGE,
            format!(
                "{hash} matches several keys (`{}`, `{}`): give the key itself",
                shown(&a),
                shown(&b)
            ),
        )),
    }
}

/// `ls`: the keys, each with its record as `inspect` reads it now (a key
/// that finished or expired since it was listed shows so).
pub(crate) async fn ls(
    store: &dyn Store,
    g: &Global,
    state: StateArg,
    scene: Option<&str>,
    limit: usize,
    out: Out,
) -> Result<u8, Fail> {
    let filter = ListFilter {
        scene,
        in_progress_only: state == StateArg::InProgress,
        limit: limit.max(1),
    };
    let keys = store
        .list(&g.namespace, filter)
        .await
        .map_err(|e| Fail::store("list", e))?;
    let mut rows: Vec<(String, Option<RecordState>)> = Vec::with_capacity(keys.len());
    for (key, _) in keys {
        let now = store
            .inspect(&key)
            .await
            .map_err(|e| Fail::store("inspect", e))?;
        rows.push((key, now));
    }
    out.listed(&g.namespace, &rows);
    Ok(OK)
}
