//! The simulated service's business error, and the unique violation its
//! simulated database raises (a real `sqlx::Error::Database`, so the
//! runtime's backstop detection runs as it would on a driver's error).

use std::error::Error as StdError;

/// A business error of the simulated service.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SimError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("transient failure")]
    Transient,
    #[error("insert failed")]
    Unique(#[source] sqlx::Error),
    #[error("on_conflict found no row")]
    NoRow,
    #[error("request rejected ({0})")]
    Rejected(u64),
}

/// Only `Rejected` is ever terminal, so only it needs a stored form.
impl serde::Serialize for SimError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SimError::Rejected(v) => s.serialize_some(v),
            _ => s.serialize_none(),
        }
    }
}

impl<'de> serde::Deserialize<'de> for SimError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<u64>::deserialize(d)? {
            Some(v) => SimError::Rejected(v),
            None => SimError::Transient,
        })
    }
}

pub(crate) fn is_rejection(e: &SimError) -> bool {
    matches!(e, SimError::Rejected(_))
}

/// The unique violation the simulated database raises: a real `sqlx::Error::Database`,
/// so the runtime's detection is exercised as with a driver.
#[derive(Debug)]
pub(crate) struct SimUnique;

impl std::fmt::Display for SimUnique {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("duplicate key value violates unique constraint \"uk_sim\"")
    }
}

impl StdError for SimUnique {}

impl sqlx::error::DatabaseError for SimUnique {
    fn message(&self) -> &str {
        "duplicate key value violates unique constraint \"uk_sim\""
    }
    fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self
    }
    fn as_error_mut(&mut self) -> &mut (dyn StdError + Send + Sync + 'static) {
        self
    }
    fn into_error(self: Box<Self>) -> Box<dyn StdError + Send + Sync + 'static> {
        self
    }
    fn constraint(&self) -> Option<&str> {
        Some("uk_sim")
    }
    fn kind(&self) -> sqlx::error::ErrorKind {
        sqlx::error::ErrorKind::UniqueViolation
    }
}

pub(crate) fn detect(e: &SimError) -> Option<&(dyn StdError + 'static)> {
    match e {
        SimError::Unique(x) => Some(x),
        _ => None,
    }
}
