//! The one-time token store contract, beside the record store's.
//!
//! A token's life is a state cycle the record protocol does not have (a record
//! is created by its claim; a token exists before anyone consumes it):
//!
//! ```text
//! issue ──> issued ──take(owner)──> spent(owner) ──(expires with the token)
//!              ^                         │
//!              └── give_back(owner) ─────┘   (its body failed)
//! ```
//!
//! A take spends the token at once: the tombstone it leaves names its owner
//! and keeps the token's remaining life from `issue`, so a retried take by the
//! same owner (after a lost reply) is recognised as the same take (`Taken`
//! with the same fence) and every other owner's take is `Invalid`. Nothing
//! follows a body that succeeded: the take was the one acceptance. Only the
//! owner can return its token, when its body failed (`give_back`); a holder
//! that crashed, or whose caller was dropped while the body ran, leaves it
//! spent. Every call is atomic per token, owner-checked and idempotent for its
//! owner. Stores that keep tokens return themselves from
//! [`Store::tokens`](super::Store::tokens).

use std::time::Duration;

use super::{BoxFuture, Owned, Owner, StoreError};
use crate::fence::Fence;

pub mod memory;

/// The answer to a [`TokenStore::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenTake {
    /// The caller spent the token (or already had: a retried take).
    Taken {
        /// A fence larger than every earlier take's of this token.
        fence: Fence,
    },
    /// No token to take: never issued, expired, or spent by another owner.
    Invalid,
}

/// A backend that keeps one-time tokens (memory, Redis, Redis Cluster, and the
/// SQL stores' token table).
pub trait TokenStore: Send + Sync {
    /// Stores a new token (its key) as issued for `ttl`. Issuing a key that
    /// exists changes nothing.
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;

    /// issued → spent(owner), keeping the token's expiry; a token this owner
    /// spent already answers `Taken` with the fence of that take. One store
    /// operation: the whole success path of a consume.
    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>>;

    /// spent(owner) → issued, keeping the token's expiry, so another
    /// submission can use it: sent when the body the token admitted failed, or
    /// never started. A token already gone is `Applied` (a retry after a lost
    /// reply, or a token that expired meanwhile); one spent by another owner,
    /// or issued (as a retried give-back may find its own), is `NotOwner`:
    /// either way there is nothing left for this owner to do.
    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;
}
