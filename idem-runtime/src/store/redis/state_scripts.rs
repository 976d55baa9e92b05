//! The state check-and-set on Redis: one script on one key (one slot), shared
//! by the single-node and cluster stores. The state is the key's plain string
//! value at `<prefix>{<key>}`, so other tools can read it.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Script, Value as Reply};

use super::codec::{KeyLayout, millis};
use super::eval::{self, Eval};
use super::scripts::{map_err, unexpected};
use crate::store::state::StateCas;
use crate::store::{Owner, StoreError};

/// KEYS[1] state, KEYS[2] a hash of each state entered to the owner that
/// entered it (same slot); ARGV mode ('V':
/// expect ARGV[2], 'N': expect no state), expected, new, ttl ms, owner. `{1}`
/// already in the new state (set by another owner), `{0}` applied (now, or by
/// this owner's earlier attempt whose reply was lost), `{2[, current]}` another
/// state (or none).
pub(crate) const CAS: &str = r#"
local v = redis.call('GET', KEYS[1])
if v and redis.call('HGET', KEYS[2], ARGV[3]) == ARGV[5] then return {0} end
if v == ARGV[3] then return {1} end
if (ARGV[1] == 'N' and not v) or (ARGV[1] == 'V' and v == ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return {0}
end
if v then return {2, v} end
return {2}
"#;

static SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(CAS));

pub(crate) async fn cas<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
    from: Option<&str>,
    to: &str,
    ttl: Duration,
) -> Result<StateCas, StoreError> {
    let bytes = 2 * key.len() + from.map_or(0, str::len) + to.len() + 64;
    let reply: Reply = Eval::new(&SCRIPT, 2, bytes)
        .key(layout.arg(key))
        .key(layout.arg_beside(key, ":by"))
        .arg(if from.is_some() { "V" } else { "N" })
        .arg(from.unwrap_or(""))
        .arg(to)
        .arg(millis(ttl).max(1))
        .arg(owner.to_bytes().as_slice())
        .query(con)
        .await
        .map_err(map_err)?;
    let Reply::Array(a) = &reply else {
        return Err(unexpected("state_cas", &reply));
    };
    match a.as_slice() {
        [Reply::Int(0)] => Ok(StateCas::Applied),
        [Reply::Int(1)] => Ok(StateCas::AlreadyApplied),
        [Reply::Int(2)] => Ok(StateCas::InvalidTransition { current: None }),
        [Reply::Int(2), Reply::BulkString(b)] => Ok(StateCas::InvalidTransition {
            current: Some(String::from_utf8_lossy(b).into_owned()),
        }),
        _ => Err(unexpected("state_cas", &reply)),
    }
}

pub(crate) async fn get<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
) -> Result<Option<String>, StoreError> {
    let v: Option<Vec<u8>> = eval::command("GET", key.len() + 16)
        .arg(layout.arg(key))
        .query_async(con)
        .await
        .map_err(map_err)?;
    Ok(v.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// `impl StateStore` for a Redis store type with `con` and `layout` fields.
macro_rules! state_store {
    ($store:ty) => {
        impl crate::store::state::StateStore for $store {
            fn state_cas<'a>(
                &'a self,
                key: &'a str,
                owner: crate::store::Owner,
                from: Option<&'a str>,
                to: &'a str,
                ttl: std::time::Duration,
            ) -> crate::store::BoxFuture<
                'a,
                Result<crate::store::state::StateCas, crate::store::StoreError>,
            > {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::state_scripts::cas(
                        &mut con,
                        &self.layout,
                        key,
                        owner,
                        from,
                        to,
                        ttl,
                    )
                    .await
                })
            }
            fn state<'a>(
                &'a self,
                key: &'a str,
            ) -> crate::store::BoxFuture<'a, Result<Option<String>, crate::store::StoreError>> {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::state_scripts::get(&mut con, &self.layout, key).await
                })
            }
        }
    };
}
pub(crate) use state_store;
