//! The store operations, written once over any redis-rs async connection
//! (the single-node `ConnectionManager` and the cluster connection).
//!
//! Every operation is one command: a claim, complete, release, renew or inspect is
//! one `EVALSHA` of a script touching one key (so one slot), `forget` is one `DEL`.
//! `Script::invoke_async` reloads a script the server forgot (restart, `SCRIPT FLUSH`)
//! and retries it once; that extra round trip happens only after such an event.
//!
//! The scripts are safe to re-run after a lost reply: each is idempotent for the
//! owner that sent it (see the comments in each script).

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Script, Value as Reply};

use super::codec::{self, DONE, HEADER, KeyLayout, Value, encode_pending, millis};
use super::eval::{Eval, Parts};
use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;
use crate::store::{Claim, ClaimRequest, Owned, Owner, RecordState, StoreError, Taken};

/// Shared prologue: classifies a value as in progress (1), done (2) or foreign (0).
/// Byte values: 193 = 0xC1 (in progress), 209 = 0xD1 (done); header length 41.
macro_rules! lua {
    ($body:literal) => {
        concat!(
            r#"
local function state(v)
  local s = string.byte(v, 1)
  local n = string.len(v)
  if s == 193 and n == 41 then return 1 end
  if s == 209 and n >= 41 then return 2 end
  return 0
end
"#,
            $body
        )
    };
}

/// KEYS[1] record; ARGV owner(16), fingerprint(16), lease ms.
/// Absent key: a new claim whose fence is the server clock in microseconds; returns
/// the fence. Present key (done, in progress by anyone, including this owner after
/// a lost reply, or foreign data): returns `{value, pttl}` unchanged and the client
/// decides; a done record's `pttl` is `0`, unread (only a holder's time left is
/// used, to cap a waiter's sleep), which spares a duplicate one `redis.call`.
/// A key is only ever written when absent, so the previous fence of the key
/// was issued at an earlier server time: the new one is larger (see the module docs
/// for the clock assumption). `struct.pack('>L', f)` is the fence as 8 big-endian
/// bytes, exact below 2^53 µs (285 years).
pub(crate) const CLAIM: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then
  if string.byte(v, 1) == 209 then return {v, 0} end
  return {v, redis.call('PTTL', KEYS[1])}
end
local t = redis.call('TIME')
local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('SET', KEYS[1], '\193' .. ARGV[1] .. struct.pack('>L', f) .. ARGV[2], 'PX', ARGV[3])
return f
"#;

/// KEYS[1] record; ARGV the claim's value as its holder took it (41 bytes),
/// owner(16), the finished value (`0xD1`, the claim's header, the payload),
/// ttl ms.
/// 1 = applied (now, or already by this owner: a retry after a lost reply),
/// 0 = not the owner (absent, someone else's, lapsed), -1 = foreign data.
/// A claim still as the holder took it (the common case) is overwritten with
/// the value the client built: no header taken apart and put together again
/// in Lua (0.5 µs of about 3.5 µs of server time). Any other value goes the
/// long way, which rebuilds the header from the stored claim, so a wrong
/// description costs only the shortcut. ARGV[1] holds this owner's bytes, so
/// an equal value is this owner's claim.
pub(crate) const COMPLETE: &str = lua!(
    r#"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  return 1
end
if not v then return 0 end
local s = state(v)
if s == 0 then return -1 end
if string.sub(v, 2, 17) ~= ARGV[2] then return 0 end
if s == 2 then return 1 end
redis.call('SET', KEYS[1], '\209' .. string.sub(v, 2, 41) .. string.sub(ARGV[3], 42), 'PX', ARGV[4])
return 1
"#
);

/// KEYS[1] record; ARGV owner(16).
/// 1 = released (now, or already gone: a retry after a lost reply), 0 = held or
/// finished by someone (a finished record is never released), -1 = foreign data.
const RELEASE: &str = lua!(
    r#"
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
local s = state(v)
if s == 0 then return -1 end
if s == 1 and string.sub(v, 2, 17) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"#
);

/// KEYS[1] record; ARGV owner(16), lease ms.
/// 1 = lease extended, 0 = not this owner's live claim, -1 = foreign data.
const RENEW: &str = lua!(
    r#"
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local s = state(v)
if s == 0 then return -1 end
if s == 1 and string.sub(v, 2, 17) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"#
);

/// KEYS[1] record. `{value, pttl}` or nil, read atomically.
const INSPECT: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}
"#;

struct Scripts {
    claim: Script,
    complete: Script,
    release: Script,
    renew: Script,
    inspect: Script,
}

static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    claim: Script::new(CLAIM),
    complete: Script::new(COMPLETE),
    release: Script::new(RELEASE),
    renew: Script::new(RENEW),
    inspect: Script::new(INSPECT),
});

pub(crate) use super::errors::{FOREIGN, map_err, unexpected};

fn remaining(pttl: i64) -> Duration {
    Duration::from_millis(u64::try_from(pttl).unwrap_or(0))
}

/// Splits a `{value, pttl}` reply.
fn value_and_ttl(op: &str, r: Reply) -> Result<Option<(Vec<u8>, i64)>, StoreError> {
    match r {
        Reply::Nil => Ok(None),
        Reply::Array(items) => match <[Reply; 2]>::try_from(items) {
            Ok([Reply::BulkString(v), Reply::Int(pttl)]) => Ok(Some((v, pttl))),
            Ok(other) => Err(unexpected(op, &Reply::Array(other.into()))),
            Err(items) => Err(unexpected(op, &Reply::Array(items))),
        },
        other => Err(unexpected(op, &other)),
    }
}

/// The operations over one connection type `C`.
pub(crate) async fn claim<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.claim, 1, req.key.len() + 64)
        .key(layout.arg(req.key))
        .arg(&req.owner.to_bytes()[..])
        .arg(&req.fingerprint.0[..])
        .arg(millis(req.lease))
        .query(con)
        .await
        .map_err(map_err)?;
    if let Reply::Int(f) = reply {
        let fence = u64::try_from(f).map_err(|_| unexpected("claim", &reply))?;
        return Ok(Claim::Claimed {
            fence: Fence::new(fence),
        });
    }
    let Some((bytes, pttl)) = value_and_ttl("claim", reply)? else {
        return Err(StoreError::Unavailable("claim answered nil".into()));
    };
    Ok(match codec::decode(bytes)? {
        Value::Done(rec) => Claim::Done(rec),
        // Our own claim: the first attempt applied but its reply was lost.
        Value::Pending { owner, fence, .. } if owner == req.owner => Claim::Claimed { fence },
        Value::Pending { fingerprint, .. } => Claim::Busy {
            fingerprint,
            remaining: remaining(pttl),
        },
    })
}

pub(super) fn owned(op: &str, r: Reply) -> Result<Owned, StoreError> {
    match r {
        Reply::Int(1) => Ok(Owned::Applied),
        Reply::Int(0) => Ok(Owned::NotOwner),
        Reply::Int(-1) => Err(StoreError::Codec(FOREIGN.into())),
        other => Err(unexpected(op, &other)),
    }
}

/// The description a plain `complete` sends: no fence, no fingerprint. It is
/// exactly right for a claim taken that way, and any other claim takes the
/// script's long way (see [`COMPLETE`]).
pub(crate) const UNDESCRIBED: Taken = Taken {
    fence: Fence::NONE,
    fingerprint: Fingerprint::NONE,
};

/// Completes `owner`'s claim of `key`, which `taken` describes (see
/// [`COMPLETE`]).
pub(crate) async fn complete<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
    taken: Taken,
    payload: &[u8],
    ttl: Duration,
) -> Result<Owned, StoreError> {
    let header = encode_pending(owner, taken.fence, taken.fingerprint);
    let reply: Reply = Eval::new(
        &SCRIPTS.complete,
        1,
        key.len() + 2 * HEADER + payload.len() + 64,
    )
    .key(layout.arg(key))
    .arg(&header[..])
    .arg(&owner.to_bytes()[..])
    .arg(Parts([&[DONE], &header[1..], payload]))
    .arg(millis(ttl))
    .query(con)
    .await
    .map_err(map_err)?;
    owned("complete", reply)
}

pub(crate) async fn release<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
    owner: Owner,
) -> Result<Owned, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.release, 1, key.len() + 32)
        .key(layout.arg(key))
        .arg(&owner.to_bytes()[..])
        .query(con)
        .await
        .map_err(map_err)?;
    owned("release", reply)
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
        .arg(millis(lease))
        .query(con)
        .await
        .map_err(map_err)?;
    owned("renew", reply)
}

pub(crate) async fn inspect<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
) -> Result<Option<RecordState>, StoreError> {
    let reply: Reply = Eval::new(&SCRIPTS.inspect, 1, key.len() + 16)
        .key(layout.arg(key))
        .query(con)
        .await
        .map_err(map_err)?;
    let Some((bytes, pttl)) = value_and_ttl("inspect", reply)? else {
        return Ok(None);
    };
    Ok(Some(match codec::decode(bytes)? {
        Value::Pending {
            owner,
            fence,
            fingerprint,
        } => RecordState::InProgress {
            owner,
            fence,
            fingerprint,
            remaining: remaining(pttl),
        },
        Value::Done(record) => RecordState::Done {
            record,
            remaining: remaining(pttl),
        },
    }))
}

pub(crate) async fn forget<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    key: &str,
) -> Result<bool, StoreError> {
    let n: i64 = redis::cmd("DEL")
        .arg(layout.arg(key))
        .query_async(con)
        .await
        .map_err(map_err)?;
    Ok(n > 0)
}

/// Loads every script so the first calls after connecting skip the `NOSCRIPT` detour.
pub(crate) async fn preload<C: ConnectionLike + Send>(con: &mut C) -> Result<(), StoreError> {
    let s = &*SCRIPTS;
    for script in [&s.claim, &s.complete, &s.release, &s.renew, &s.inspect] {
        script
            .prepare_invoke()
            .load_async(con)
            .await
            .map_err(map_err)?;
    }
    Ok(())
}
