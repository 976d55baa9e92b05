//! One-time tokens on Redis: one key per token (`<prefix>{<token key>}`, so a
//! token is one slot in a cluster), each operation one command (a script, or
//! a native `SET` to issue). Shared by the single-node and cluster stores,
//! like the record scripts.
//!
//! ```text
//! issued: "I"
//! spent:  "S" owner(16) <fence, server µs>
//! ```
//!
//! The key's `PX` expiry is the token's life from `issue` and is kept through
//! the cycle: the take grows the value from `I` to the tombstone with one
//! `SETRANGE`, which keeps the expiry; only the give-back, which shrinks it to
//! `I`, reads `PTTL` and writes it back (Redis 5 has no `KEEPTTL`). A consume
//! whose body succeeds is the issue's `SET` and the take's script, nothing
//! more: the tombstone is the spent token, and it goes with the token's
//! expiry. A value `C…` is a token an earlier version of idem is consuming
//! (it deleted or gave back its token after the body): another owner's, so
//! `Invalid` here. Numbers are written with `%.0f`: Lua 5.1's `..` formats
//! with 14 significant digits, which would round a 16-digit fence. The owner
//! is joined with `..`, never passed to `%s`: Lua 5.1's `string.format` cuts a
//! short string at its first zero byte, and an owner is 16 random bytes.
//!
//! Each `redis.call` inside a script costs the server about a microsecond on
//! Redis 7 (more than a native `SET` in all), so the scripts make as few as
//! they can: the take reads the clock (`TIME`, for the fence) only when it
//! spends an issued token, and a retried take of our own is one `GET`.
//! `tests/it/redis/script_calls.rs` counts them.

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

/// KEYS[1] token; ARGV owner(16).
/// `0` invalid (none, or spent by another owner), `{1, fence}` taken (now, or
/// already by this owner), `-1` foreign data.
const TAKE: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local k = string.sub(v, 1, 1)
if k == 'S' then
  if string.sub(v, 2, 17) ~= ARGV[1] then return 0 end
  local f = tonumber(string.sub(v, 18))
  if not f then return -1 end
  return {1, f}
end
if k == 'C' then return 0 end
if not (k == 'I' and string.len(v) == 1) then return -1 end
local t = redis.call('TIME')
local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('SETRANGE', KEYS[1], 0, 'S' .. ARGV[1] .. string.format('%.0f', f))
return {1, f}
"#;

/// KEYS[1] token; ARGV owner(16): spent by this owner → issued, with the
/// token's time left. 1 applied (or the token is gone already), 0 not this
/// owner's tombstone.
const GIVE_BACK: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
if string.sub(v, 1, 1) ~= 'S' or string.sub(v, 2, 17) ~= ARGV[1] then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('SET', KEYS[1], 'I', 'PX', ttl)
else
  redis.call('SET', KEYS[1], 'I')
end
return 1
"#;

struct Scripts {
    take: Script,
    give_back: Script,
}

static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    take: Script::new(TAKE),
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
) -> Result<TokenTake, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.take, 1, key.len() + 32)
        .key(layout.arg(key))
        .arg(&owner.to_bytes()[..])
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
            _ => Err(unexpected("take", &reply)),
        },
        _ => Err(unexpected("take", &reply)),
    }
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
            ) -> crate::store::BoxFuture<
                'a,
                Result<crate::store::token::TokenTake, crate::store::StoreError>,
            > {
                let mut con = self.con();
                Box::pin(async move {
                    crate::store::redis::token_scripts::take(&mut con, &self.layout, key, owner)
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
        }
    };
}
pub(crate) use token_store;
