//! What operators ask of a store besides the protocol (see the `idem`
//! command): which keys to list, and whether a record is still the one an
//! operator inspected.

use super::{RecordState, StoreError};
use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;
use crate::store::Owner;

/// Which keys [`Store::list`](super::Store::list) answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListFilter<'a> {
    /// Only this scene's keys (as `Idem::guard` names it; escaped as keys
    /// render it). `None`: every scene of the namespace.
    pub scene: Option<&'a str>,
    /// Only live in-progress claims; otherwise finished records too.
    pub in_progress_only: bool,
    /// At most this many keys, the first in key order (0: no limit).
    pub limit: usize,
}

impl ListFilter<'_> {
    /// What every listed key starts with: the namespace's prefix, then the
    /// scene's and its `:` when a scene is given.
    pub(crate) fn key_prefix(&self, namespace: &str) -> String {
        let mut p = crate::key::namespace_prefix(namespace);
        if let Some(scene) = self.scene {
            crate::key::escape_into(&mut p, scene);
            p.push(':');
        }
        p
    }

    /// The limit as a count of keys (`usize::MAX` for none).
    pub(crate) fn max(&self) -> usize {
        if self.limit == 0 {
            usize::MAX
        } else {
            self.limit
        }
    }
}

/// What makes a record the one that was read: its state, owner, fence and
/// fingerprint. A claim taken after it expired differs in owner and fence;
/// the same claim finished differs in state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) done: bool,
    pub(crate) owner: Owner,
    pub(crate) fence: Fence,
    pub(crate) fingerprint: Fingerprint,
}

impl RecordState {
    /// Its [`Identity`].
    pub(crate) fn identity(&self) -> Identity {
        match self {
            RecordState::InProgress {
                owner,
                fence,
                fingerprint,
                ..
            } => Identity {
                done: false,
                owner: *owner,
                fence: *fence,
                fingerprint: *fingerprint,
            },
            RecordState::Done { record, .. } => Identity {
                done: true,
                owner: record.owner,
                fence: record.fence,
                fingerprint: record.fingerprint,
            },
        }
    }
}

/// The default answer of an operator call a store does not offer.
pub(crate) fn refused(store: &str, what: &str) -> StoreError {
    StoreError::config(format!("the {store} store cannot {what}"))
}
