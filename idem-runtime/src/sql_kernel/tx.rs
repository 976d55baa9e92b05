//! Transactions that a caller's cancellation cannot cut in half.

/// Runs a multi-statement transaction in a task of its own, so a caller that
/// stops waiting (an operation timeout, a dropped request) cannot cut it
/// between `BEGIN` and `COMMIT`. A cut inside sqlx's `begin()` (after `BEGIN`
/// was sent, before the transaction object exists) returns the connection to
/// the pool with the transaction still open: every later statement on it runs
/// inside that transaction and never commits, and its locks stay. idem's stress
/// run showed exactly that (a `DROP TABLE` waiting forever for a metadata lock
/// held by an idle pooled connection). Detached, the transaction always
/// finishes; its effect must therefore be one the caller can find again (a
/// claim found by its owner's retry, or lapsing with its lease).
///
/// A panic in the task comes back as `sqlx::Error::Protocol`.
pub async fn detached<T, Fut>(tx: Fut) -> Result<T, sqlx::Error>
where
    T: Send + 'static,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>> + Send + 'static,
{
    match tokio::spawn(tx).await {
        Ok(r) => r,
        Err(e) => Err(sqlx::Error::Protocol(format!(
            "transaction task failed: {e}"
        ))),
    }
}
