//! The one-time token store contract, beside the record store's.
//!
//! A token's life is a state cycle the record protocol does not have (a record
//! is created by its claim; a token exists before anyone consumes it):
//!
//! ```text
//! issue ──> issued ──take(owner, lease)──> consuming(owner, lease) ──revoke──> deleted
//!              ^                                │                 (body succeeded)
//!              └──── give_back (body failed) ───┤
//!              └──── lease lapsed (crash) ──────┘   (a later take takes it over)
//! ```
//!
//! Every call is atomic per token, owner-checked but `revoke` (a succeeded
//! body's token goes whoever holds it by then), and idempotent for its owner
//! (a retried `take` after a lost reply is `Taken` again with the same
//! fence). A token keeps its issue-time expiry through the whole cycle. Stores
//! that keep tokens return themselves from [`Store::tokens`](super::Store::tokens).

use std::time::Duration;

use super::{BoxFuture, Owned, Owner, StoreError};
use crate::fence::Fence;

pub mod memory;

/// The answer to a [`TokenStore::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenTake {
    /// The caller now holds the token (or already did: a retried take).
    Taken {
        /// A fence larger than every earlier take's of this token.
        fence: Fence,
    },
    /// Another owner is consuming it; its lease lapses in `remaining`.
    Busy {
        /// Time left on the holder's lease.
        remaining: Duration,
    },
    /// No such token: never issued, consumed, or expired.
    Invalid,
}

/// A backend that keeps one-time tokens (memory, Redis, Redis Cluster, and the
/// SQL stores' token table).
pub trait TokenStore: Send + Sync {
    /// Stores a new token (its key) as issued for `ttl`. Issuing a key that
    /// exists changes nothing.
    fn issue<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;

    /// issued → consuming(owner, lease); a consuming token whose lease lapsed
    /// is taken over.
    fn take<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<TokenTake, StoreError>>;

    /// Extends `owner`'s consuming lease to `lease` from now.
    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;

    /// consuming(owner) → issued, so another submission can use it.
    fn give_back<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>>;

    /// Deletes the token in whatever state it is, for whoever holds it: sent
    /// when a body the token admitted succeeded. That success is the one
    /// acceptance, so none may follow it, even if the body outlived its lease
    /// and the token moved on (given back, or taken over by another
    /// submission): waiting for the other holder to let go lost the race to
    /// the next submission (token simulation, seed 3059487). One ownerless
    /// delete, where an owner-checked one then this took two operations for
    /// the same end (one native `DEL` on Redis instead of a script). A token
    /// already gone is `Applied` (a retry after a lost reply, or a token that
    /// expired while its body ran).
    fn revoke<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Owned, StoreError>>;
}
