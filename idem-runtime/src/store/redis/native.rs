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
//! [`Store::claim_unfenced`]: crate::store::Store::claim_unfenced

use redis::Value as Reply;
use redis::aio::ConnectionLike;

use super::codec::{self, KeyLayout, Value, millis};
use super::scripts::{self, map_err, unexpected};
use crate::outcome::Fence;
use crate::store::{Claim, ClaimRequest, StoreError};

/// Claims `req.key` without a fence, or returns the finished record, or (through
/// the claim script) the holder's fingerprint and remaining lease.
pub(crate) async fn claim_unfenced<C: ConnectionLike + Send>(
    con: &mut C,
    layout: &KeyLayout,
    req: ClaimRequest<'_>,
) -> Result<Claim, StoreError> {
    let pending = codec::encode_pending(req.owner, Fence::NONE, req.fingerprint);
    let reply: Reply = redis::cmd("SET")
        .arg(layout.arg(req.key))
        .arg(&pending[..])
        .arg("NX")
        .arg("PX")
        .arg(millis(req.lease))
        .arg("GET")
        .query_async(con)
        .await
        .map_err(map_err)?;
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
