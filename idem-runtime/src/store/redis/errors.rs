//! How a Redis reply error maps to a `StoreError`: a refusal (the server's
//! verdict on the command) is not an outage; everything else that is not an
//! answer is.

use redis::{RedisError, Value as Reply};

use crate::store::StoreError;

pub(crate) const FOREIGN: &str = "the key holds a value that is not an idem record of this format";

/// Maps a redis-rs error: `WRONGTYPE` means the key holds something else
/// (a hash, a list...); another error the server answered with is a refusal
/// ([`refused`]); everything else is "no usable answer".
pub(crate) fn map_err(e: RedisError) -> StoreError {
    if e.code() == Some("WRONGTYPE") || e.to_string().contains("WRONGTYPE") {
        StoreError::codec(
            "the key holds a Redis value that is not a string (WRONGTYPE): not an idem record",
        )
        .with_source(e)
    } else if refused(&e) {
        StoreError::config(format!("redis refused the command: {e}")).with_source(e)
    } else {
        StoreError::unavailable(e.to_string()).with_source(e)
    }
}

/// Did the server answer with an error that is its verdict on the command
/// (`ERR`, a script error, `NOPERM`, `OOM`, `NOSCRIPT` after the reload...)?
/// Such an answer is not an outage: the command did not apply, retrying it
/// changes nothing, and counting it would let a refused command open the
/// circuit breaker for every other call. The states in which a
/// healthy server says "not now" (loading its data set, busy in a script, a
/// failover or cluster reconfiguration under way, too few replicas for
/// `min-replicas-to-write`) stay outages, as do I/O
/// errors, timeouts and dropped connections.
pub(crate) fn refused(e: &RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind as S};
    match e.kind() {
        ErrorKind::Server(
            S::BusyLoading | S::TryAgain | S::ClusterDown | S::MasterDown | S::ReadOnly,
        )
        | ErrorKind::Server(S::Moved | S::Ask) => false,
        ErrorKind::Server(_) => true,
        // `NOREPLICAS`: a primary with `min-replicas-to-write` that has too
        // few replicas in reach refuses writes until they are back, as a
        // primary in a failover would.
        ErrorKind::Extension => !matches!(e.code(), Some("BUSY" | "NOREPLICAS")),
        _ => false,
    }
}

pub(crate) fn unexpected(op: &str, r: &Reply) -> StoreError {
    StoreError::unavailable(format!("unexpected reply to {op}: {r:?}"))
}
