//! One-time tokens on Redis: one key per token (`<prefix>{<token key>}`, so a
//! token is one slot in a cluster), each operation one command (a script, or
//! a native `SET` / `DEL` where nothing needs checking). Shared by the
//! single-node and cluster stores, like the record scripts.
//!
//! ```text
//! issued:    "I"
//! consuming: "C" owner(16) <lease deadline, server ms> ":" <fence, server µs>
//! ```
//!
//! The key's `PX` expiry is the token's life from `issue` and is kept through the
//! cycle. A value that does not shrink (issued to consuming, a renewal, a
//! takeover: the consuming value has a fixed width in practice) is written
//! with `SETRANGE`, which keeps the expiry on every version; only the
//! give-back, which shrinks it to `I`, reads `PTTL` and writes it back (Redis 5
//! has no `KEEPTTL`). The lease of a consuming token is a deadline in server
//! time inside the value, so a taker whose process died is taken over once it
//! passes. Numbers are written with `%.0f`: Lua 5.1's `..` formats with 14
//! significant digits, which would round a 16-digit fence. The owner is
//! joined with `..`, never passed to `%s`: Lua 5.1's `string.format` cuts a
//! short string at its first zero byte, and an owner is 16 random bytes.
//!
//! Each `redis.call` inside a script costs the server about a microsecond on
//! Redis 7 (more than a native `SET` in all), so the scripts make as few as
//! they can, and a step that needs no check is no script at all (issue 29):
//! only the take and the renewal read the clock (`TIME`), the take writes with
//! one `SETRANGE` instead of `PTTL` and `SET … PX` (4 calls to 3), and a
//! succeeded body's token goes with one native `DEL` (`revoke`, whoever holds
//! it), where a script checked the owner first. `tests/it/redis/script_calls.rs`
//! counts them.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Script, Value as Reply};

use super::codec::{KeyLayout, millis};
use super::eval::{self, Eval};
use super::scripts::{map_err, owned, unexpected};
use crate::fence::Fence;
use crate::store::token::TokenTake;
use crate::store::{Owned, Owner, StoreError};

/// Writes `v` over the token's value `old`, keeping the key's expiry.
macro_rules! put {
    () => {
        r#"
local function put(old, v)
  if string.len(v) >= string.len(old) then
    redis.call('SETRANGE', KEYS[1], 0, v)
    return
  end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('SET', KEYS[1], v, 'PX', ttl)
  else
    redis.call('SET', KEYS[1], v)
  end
end
"#
    };
}

/// Server time (`t`, and `now` in ms), and the parts of a consuming value:
/// the prologue of the scripts that stamp a lease.
macro_rules! clock {
    () => {
        r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function parts(v)
  local d, f = string.match(string.sub(v, 18), '^(%d+):(%d+)$')
  return string.sub(v, 2, 17), tonumber(d), tonumber(f)
end
"#
    };
}

/// KEYS[1] token; ARGV owner(16), lease ms.
/// `0` invalid, `{1, fence}` taken (now, or already by this owner), `{2, ms}`
/// busy, `-1` foreign data. A lapsed consumer is taken over with a new fence.
const TAKE: &str = concat!(
    clock!(),
    put!(),
    r#"
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local k = string.sub(v, 1, 1)
if k == 'C' then
  local o, d, f = parts(v)
  if not d then return -1 end
  if o == ARGV[1] then return {1, f} end
  if d > now then return {2, d - now} end
elseif not (k == 'I' and string.len(v) == 1) then
  return -1
end
local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
put(v, 'C' .. ARGV[1] .. string.format('%.0f:%.0f', now + tonumber(ARGV[2]), f))
return {1, f}
"#
);

/// KEYS[1] token; ARGV owner(16), lease ms. 1 renewed, 0 not this owner's.
const RENEW: &str = concat!(
    clock!(),
    put!(),
    r#"
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'C' then return 0 end
local o, d, f = parts(v)
if o ~= ARGV[1] or not d then return 0 end
put(v, 'C' .. o .. string.format('%.0f:%.0f', now + tonumber(ARGV[2]), f))
return 1
"#
);

/// KEYS[1] token; ARGV owner(16): back to issued. 1 applied (or the token is
/// gone already), 0 another owner's. Reads no clock: the owner in the value is
/// all it checks.
const GIVE_BACK: &str = concat!(
    put!(),
    r#"
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
if string.sub(v, 1, 1) ~= 'C' or string.sub(v, 2, 17) ~= ARGV[1] then return 0 end
put(v, 'I')
return 1
"#
);

struct Scripts {
    take: Script,
    renew: Script,
    give_back: Script,
}

static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    take: Script::new(TAKE),
    renew: Script::new(RENEW),
    give_back: Script::new(GIVE_BACK),
});

pub(crate) async fn issue<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    ttl: Duration,
) -> Result<(), StoreError> {
    let _: Reply = eval::command("SET", key.len() + 48)
        .arg(layout.arg(key))
        .arg("I")
        .arg("NX")
        .arg("PX")
        .arg(millis(ttl).max(1))
        .query_async(con)
        .await
        .map_err(map_err)?;
    Ok(())
}

pub(crate) async fn take<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
    lease: Duration,
) -> Result<TokenTake, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.take, 1, key.len() + 48)
        .key(layout.arg(key))
        .arg(&owner.to_bytes()[..])
        .arg(millis(lease).max(1))
        .query(con)
        .await
        .map_err(map_err)?;
    match &reply {
        Reply::Int(0) => Ok(TokenTake::Invalid),
        Reply::Int(-1) => Err(StoreError::Codec(
            "the key holds a value that is not an idem token".into(),
        )),
        Reply::Array(a) => match a.as_slice() {
            [Reply::Int(1), Reply::Int(f)] => Ok(TokenTake::Taken {
                fence: Fence::new(u64::try_from(*f).map_err(|_| unexpected("take", &reply))?),
            }),
            [Reply::Int(2), Reply::Int(ms)] => Ok(TokenTake::Busy {
                remaining: Duration::from_millis(u64::try_from(*ms).unwrap_or(0)),
            }),
            _ => Err(unexpected("take", &reply)),
        },
        _ => Err(unexpected("take", &reply)),
    }
}

pub(crate) async fn renew<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
    lease: Duration,
) -> Result<Owned, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.renew, 1, key.len() + 48)
        .key(layout.arg(key))
        .arg(&owner.to_bytes()[..])
        .arg(millis(lease).max(1))
        .query(con)
        .await
        .map_err(map_err)?;
    owned("token renew", reply)
}

/// Returns `owner`'s token to issued (`TokenStore::give_back`).
pub(crate) async fn give_back<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
) -> Result<Owned, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.give_back, 1, key.len() + 48)
        .key(layout.arg(key))
        .arg(&owner.to_bytes()[..])
        .query(con)
        .await
        .map_err(map_err)?;
    owned("token give back", reply)
}

/// Deletes the token whoever holds it (`TokenStore::revoke`): one `DEL`.
pub(crate) async fn revoke<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
) -> Result<Owned, StoreError> {
    let _: i64 = eval::command("DEL", key.len() + 16)
        .arg(layout.arg(key))
        .query_async(con)
        .await
        .map_err(map_err)?;
    Ok(Owned::Applied)
}

/// `impl TokenStore` for a Redis store type with `con` and `layout` fields.
macro_rules! token_store {
    ($store:ty) => {
        impl crate::store::token::TokenStore for $store {
            fn issue<'a>(
                &'a self,
                key: &'a str,
                ttl: std::time::Duration,
            ) -> crate::store::BoxFuture<'a, Result<(), crate::store::StoreError>> {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::issue(&mut con, &self.layout, key, ttl)
                        .await
                })
            }
            fn take<'a>(
                &'a self,
                key: &'a str,
                owner: crate::store::Owner,
                lease: std::time::Duration,
            ) -> crate::store::BoxFuture<
                'a,
                Result<crate::store::token::TokenTake, crate::store::StoreError>,
            > {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::take(
                        &mut con,
                        &self.layout,
                        key,
                        owner,
                        lease,
                    )
                    .await
                })
            }
            fn renew<'a>(
                &'a self,
                key: &'a str,
                owner: crate::store::Owner,
                lease: std::time::Duration,
            ) -> crate::store::BoxFuture<'a, Result<crate::store::Owned, crate::store::StoreError>>
            {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::renew(
                        &mut con,
                        &self.layout,
                        key,
                        owner,
                        lease,
                    )
                    .await
                })
            }
            fn give_back<'a>(
                &'a self,
                key: &'a str,
                owner: crate::store::Owner,
            ) -> crate::store::BoxFuture<'a, Result<crate::store::Owned, crate::store::StoreError>>
            {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::give_back(
                        &mut con,
                        &self.layout,
                        key,
                        owner,
                    )
                    .await
                })
            }
            fn revoke<'a>(
                &'a self,
                key: &'a str,
            ) -> crate::store::BoxFuture<'a, Result<crate::store::Owned, crate::store::StoreError>>
            {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::revoke(&mut con, &self.layout, key).await
                })
            }
        }
    };
}
pub(crate) use token_store;
