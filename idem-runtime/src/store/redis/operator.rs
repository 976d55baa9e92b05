//! The operator calls both Redis stores share (`idem ls`, `idem forget`,
//! `idem purge -n`): listing by `SCAN` (see `census.rs`), and the
//! conditional delete, one script comparing the record's header with the one
//! the operator read.

use redis::aio::ConnectionLike;

use super::codec::{self, KeyLayout};
use super::errors::map_err;
use crate::store::{Counted, ListFilter, RecordState, StoreError};

/// Deletes the record only while its first 41 bytes (state, owner, fence,
/// fingerprint: `codec.rs`) are still `ARGV[1]`.
const FORGET_IF: &str = r"
local head = redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
if head == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

static SCRIPT: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(FORGET_IF));

/// The header a record `seen` starts with, as `codec.rs` lays it out.
fn header(seen: &RecordState) -> [u8; codec::HEADER] {
    let id = seen.identity();
    let mut h = codec::encode_pending(id.owner, id.fence, id.fingerprint);
    if id.done {
        h[0] = codec::DONE;
    }
    h
}

/// `forget_if` on one connection.
pub(super) async fn forget_if<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    seen: &RecordState,
) -> Result<bool, StoreError> {
    let n: i64 = SCRIPT
        .key(layout.record_key(key))
        .arg(&header(seen)[..])
        .arg(codec::HEADER)
        .invoke_async(con)
        .await
        .map_err(map_err)?;
    Ok(n > 0)
}

/// The keys of a scan, filtered, sorted and cut as `filter` asks.
pub(super) fn listed(
    mut found: Vec<(String, Counted)>,
    filter: ListFilter<'_>,
) -> Vec<(String, Counted)> {
    found.retain(|(_, s)| !filter.in_progress_only || *s == Counted::InProgress);
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.dedup_by(|a, b| a.0 == b.0);
    found.truncate(filter.max());
    found
}

/// The operator calls of a Redis store with a `scan_all(pattern)` method and
/// `conns` and `layout` fields, expanded inside each `impl Store`.
macro_rules! operator_ops {
    () => {
        /// `SCAN`s for the keys (see `census.rs`): reads every key under the
        /// prefix.
        fn list<'a>(
            &'a self,
            namespace: &'a str,
            filter: crate::store::ListFilter<'a>,
        ) -> BoxFuture<'a, Result<Vec<(String, crate::store::Counted)>, StoreError>> {
            Box::pin(async move {
                let prefix = filter.key_prefix(namespace);
                let pattern = crate::store::redis::census::pattern_for(&self.layout, &prefix);
                let found = self.scan_all(&pattern).await?;
                Ok(crate::store::redis::operator::listed(found, filter))
            })
        }

        fn forget_if<'a>(
            &'a self,
            key: &'a str,
            seen: &'a RecordState,
        ) -> BoxFuture<'a, Result<bool, StoreError>> {
            let mut con = self.con();
            Box::pin(async move {
                crate::store::redis::operator::forget_if(&mut con, &self.layout, key, seen).await
            })
        }

        /// Redis expires records itself: nothing to purge.
        fn purge_namespace<'a>(
            &'a self,
            _namespace: &'a str,
            _dry_run: bool,
        ) -> BoxFuture<'a, Result<u64, StoreError>> {
            Box::pin(std::future::ready(Ok(0)))
        }
    };
}
pub(super) use operator_ops;
