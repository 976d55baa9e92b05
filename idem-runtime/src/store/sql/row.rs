//! [`RawRow`]: a record row as every dialect reads it back, and its checked
//! conversion into the store's answers. Anything idem did not write (a wrong
//! state, a short owner, a finished row without payload) is a `Codec` error,
//! never a guess.

use std::time::Duration;

use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;
use crate::store::{Claim, DoneRecord, Owner, RecordState, StoreError};

/// A record row as every dialect reads it back.
#[derive(Debug)]
pub(crate) struct RawRow {
    pub(crate) state: i64,
    pub(crate) owner: Vec<u8>,
    pub(crate) fence: i64,
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) payload: Option<Vec<u8>>,
    pub(crate) remaining_us: i64,
}

const PENDING: i64 = 0;
const DONE: i64 = 1;

fn bytes16(what: &str, b: &[u8]) -> Result<[u8; 16], StoreError> {
    b.try_into()
        .map_err(|_| StoreError::codec(format!("{what} is {} bytes, expected 16", b.len())))
}

impl RawRow {
    fn remaining(&self) -> Duration {
        Duration::from_micros(self.remaining_us.max(0) as u64)
    }

    /// The row as an operator sees it. Rejects anything idem did not write.
    pub(crate) fn into_state(self) -> Result<RecordState, StoreError> {
        let owner = Owner::from_bytes(bytes16("owner", &self.owner)?);
        let fingerprint = Fingerprint(bytes16("fingerprint", &self.fingerprint)?);
        if self.fence <= 0 {
            return Err(StoreError::codec(format!(
                "fence {} is not positive",
                self.fence
            )));
        }
        let fence = Fence::new(self.fence as u64);
        let remaining = self.remaining();
        match self.state {
            PENDING => Ok(RecordState::InProgress {
                owner,
                fence,
                fingerprint,
                remaining,
            }),
            DONE => {
                let payload = self
                    .payload
                    .ok_or_else(|| StoreError::codec("finished record without payload"))?;
                Ok(RecordState::Done {
                    record: DoneRecord {
                        fingerprint,
                        fence,
                        owner,
                        payload,
                    },
                    remaining,
                })
            }
            s => Err(StoreError::codec(format!("unknown record state {s}"))),
        }
    }

    /// [`into_claim`](Self::into_claim) with the row's remaining time (a
    /// finished record's ttl left, for a front store that learns it).
    pub(crate) fn into_answer(self, me: Owner) -> Result<(Claim, Duration), StoreError> {
        let remaining = self.remaining();
        Ok((self.into_claim(me)?, remaining))
    }

    /// The answer a claim by `me` gets when it finds this live row.
    pub(crate) fn into_claim(self, me: Owner) -> Result<Claim, StoreError> {
        Ok(match self.into_state()? {
            RecordState::Done { record, .. } => Claim::Done(record),
            RecordState::InProgress { owner, fence, .. } if owner == me => Claim::Claimed { fence },
            RecordState::InProgress {
                fingerprint,
                remaining,
                ..
            } => Claim::Busy {
                fingerprint,
                remaining,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_rows_are_codec_errors() {
        let row = |state, owner: usize, payload: Option<Vec<u8>>| RawRow {
            state,
            owner: vec![1; owner],
            fence: 5,
            fingerprint: vec![0; 16],
            payload,
            remaining_us: 10,
        };
        assert!(matches!(
            row(7, 16, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(0, 3, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(1, 16, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(1, 16, Some(vec![1])).into_state(),
            Ok(RecordState::Done { .. })
        ));
        let me = Owner::from_bytes([1; 16]);
        assert_eq!(
            row(0, 16, None).into_claim(me).unwrap(),
            Claim::Claimed {
                fence: Fence::new(5)
            }
        );
    }
}
