//! The claim as one native command, for callers that never read the fence of a
//! new claim: `SET <record> <pending value> NX PX <lease> GET`.
//!
//! Redis runs a native command at a fraction of a script's cost (the claim script
//! sets up a Lua call and runs `GET`, `TIME` and `SET` inside it: about 2× a
//! `SET` on the server, and the server's one thread is what a busy Redis runs
//! out of). The native command gives the same answers as the script except for
//! two things, both handled here:
//!
//! - the value it writes is built by the client, which has no clock that may
//!   serve as a fence: the claim carries [`Fence::NONE`] (0). Only a body without
//!   an `idem::Fence` parameter claims this way ([`Store::claim_unfenced`]); a
//!   caller that reads its fence uses the script, whose server-time fences are
//!   larger than every earlier one whatever the unfenced claims in between did
//!   (they wrote no fence at all);
//! - `GET` returns the old value but not its time to live: another owner's claim
//!   (the only answer that needs the remaining lease) is asked again through the
//!   claim script, which reads value and `PTTL` atomically, or takes the key if
//!   the holder's lease lapsed in between. That costs a second round trip, only
//!   when the caller is about to wait anyway.
//!
//! A finished record (the duplicate of a finished call) and an absent key (a
//! first call) are answered by this one command, as is the owner's own claim
//! after a lost reply (its value carries the owner). The key is written only when
//! absent (`NX`), so a finished record or someone else's claim is never touched.
//!
//! `NX` together with `GET` needs Redis 7.0. Below it ([`NativeClaim`]) the
//! claim script answers instead: it gives every answer the native command
//! gives, plus a fence nobody reads.
//!
//! [`Store::claim_unfenced`]: crate::store::Store::claim_unfenced

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redis::Value as Reply;
use redis::aio::ConnectionLike;

use super::codec::{self, KeyLayout, Value, millis};
use super::eval;
use super::scripts::{self, map_err, unexpected};
use super::server;
use crate::outcome::Fence;
use crate::store::{Claim, ClaimRequest, StoreError};

/// Claims `req.key` without a fence, or returns the finished record, or (through
/// the claim script) the holder's fingerprint and remaining lease.
pub(crate) async fn claim_unfenced<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    native: &NativeClaim,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    if !native.usable() {
        return scripts::claim(con, layout, req).await;
    }
    let pending = codec::encode_pending(req.owner, Fence::NONE, req.fingerprint);
    let sent = eval::command("SET", req.key.len() + 96)
        .arg(layout.arg(req.key))
        .arg(&pending[..])
        .arg("NX")
        .arg("PX")
        .arg(millis(req.lease))
        .arg("GET")
        .query_async(con)
        .await;
    let reply: Reply = match sent {
        Ok(r) => r,
        // A server before 7.0 rejects the command before running it: nothing
        // was written, and the script claims instead, now and from now on.
        Err(e) if lacks_nx_get(&e) => {
            native.turn_off(&e.to_string());
            return scripts::claim(con, layout, req).await;
        }
        Err(e) => return Err(map_err(e)),
    };
    let old = match reply {
        // Absent: the key is ours now.
        Reply::Nil => return Ok(Claim::Claimed { fence: Fence::NONE }),
        Reply::BulkString(old) => old,
        other => return Err(unexpected("claim", &other)),
    };
    match codec::decode(old)? {
        Value::Done(rec) => Ok(Claim::Done(rec)),
        // Our own claim: an earlier attempt applied but its reply was lost.
        Value::Pending { owner, fence, .. } if owner == req.owner => Ok(Claim::Claimed { fence }),
        // Someone else's: the script reads the holder's time left atomically.
        Value::Pending { .. } => scripts::claim(con, layout, req).await,
    }
}

/// The first Redis version whose `SET` takes `NX` and `GET` together.
pub(super) const NATIVE_SINCE: u32 = 7;

/// Whether the store's server takes the native claim: yes unless `INFO` said
/// otherwise at connect ([`follow`](Self::follow)), or the server refused the
/// command once (a store built lazily, or a failover to an older replica).
/// Off is for good: the script is correct on every version.
#[derive(Debug, Clone, Default)]
pub(super) struct NativeClaim {
    off: Arc<AtomicBool>,
}

impl NativeClaim {
    pub(super) fn usable(&self) -> bool {
        !self.off.load(Ordering::Relaxed)
    }

    fn turn_off(&self, why: &str) {
        if !self.off.swap(true, Ordering::Relaxed) {
            tracing::info!(
                reason = why,
                "redis: the server has no `SET … NX … GET` (Redis < 7.0): claims without a \
                 fence use the claim script"
            );
        }
    }

    /// Reads the version of the servers behind `con` (the leaves of an `INFO
    /// server` reply: one text, or one per cluster master). Best effort: a
    /// server that does not answer is left to the first claim to find out.
    pub(super) fn follow(&self, reply: &Reply) {
        let mut texts = Vec::new();
        server::strings(reply, &mut texts);
        for info in &texts {
            if server::major_version(info).is_some_and(|v| v < NATIVE_SINCE) {
                self.turn_off(&format!(
                    "INFO reports redis_version {}",
                    server::version(info).unwrap_or("?")
                ));
            }
        }
    }
}

/// `ERR syntax error`: what Redis 5 and 6 answer to `SET … NX … GET`.
fn lacks_nx_get(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
        && e.to_string().contains("syntax error")
}

/// Reads the server version into `native` (see [`NativeClaim::follow`]).
pub(super) async fn detect<C: ConnectionLike + Send>(con: &mut C, native: &NativeClaim) {
    match redis::cmd("INFO")
        .arg("server")
        .query_async::<Reply>(con)
        .await
    {
        Ok(reply) => native.follow(&reply),
        Err(e) => tracing::debug!(error = %e, "redis: INFO server unanswered at connect"),
    }
}
