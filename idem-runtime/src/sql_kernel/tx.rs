//! Work that a caller's cancellation cannot cut in half.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs a multi-statement transaction so that a caller that stops waiting (an
/// operation timeout, a dropped request) cannot cut it between `BEGIN` and
/// `COMMIT` (`run_to_end`). A cut inside sqlx's `begin()` (after `BEGIN`
/// was sent, before the transaction object exists) returns the connection to
/// the pool with the transaction still open: every later statement on it runs
/// inside that transaction and never commits, and its locks stay. idem's stress
/// run showed exactly that (a `DROP TABLE` waiting forever for a metadata lock
/// held by an idle pooled connection). The transaction always finishes; its
/// effect must therefore be one the caller can find again (a claim found by its
/// owner's retry, or lapsing with its lease).
///
/// A panic in it comes back as `sqlx::Error::Protocol`.
pub async fn detached<T, Fut>(tx: Fut) -> Result<T, sqlx::Error>
where
    T: Send + 'static,
    Fut: Future<Output = Result<T, sqlx::Error>> + Send + 'static,
{
    match run_to_end(tx).await {
        Ok(r) => r,
        Err(Panicked) => Err(sqlx::Error::Protocol(
            "transaction task failed: panicked".into(),
        )),
    }
}

/// `work` panicked (it is dropped; the caller gets an error instead).
#[derive(Debug)]
pub(crate) struct Panicked;

/// Runs `work` to its end whether or not the caller still waits for it. The
/// caller polls it in place while it waits; only a caller dropped before the
/// end hands the rest to a task of its own. Spawning it up front cost every
/// statement a task hop and a cross-thread wake-up: a third of a PostgreSQL
/// duplicate's time at one caller.
pub(crate) fn run_to_end<F>(work: F) -> RunToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send,
{
    RunToEnd {
        work: Some(Box::pin(work)),
    }
}

/// See [`run_to_end`]. Boxed so the unfinished rest can move to a task.
pub(crate) struct RunToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send,
{
    work: Option<Pin<Box<F>>>,
}

impl<F> Future for RunToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send,
{
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(work) = self.work.as_mut() else {
            // Polled after it ended: like a panicked task's join.
            return Poll::Ready(Err(Panicked));
        };
        let out = match std::panic::catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(out)) => Ok(out),
            Err(_) => Err(Panicked),
        };
        self.work = None;
        Poll::Ready(out)
    }
}

impl<F> Drop for RunToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send,
{
    fn drop(&mut self) {
        // Unfinished: its statements may still apply, so they run to their
        // end. Outside a runtime (its shutdown) nothing can run them.
        if let Some(work) = self.work.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(work);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    /// Dropped mid-way, the work still ends (in a task); a panic is an error.
    #[tokio::test]
    async fn dropped_work_runs_to_its_end_and_a_panic_is_an_error() {
        let ended = Arc::new(AtomicBool::new(false));
        let work = {
            let ended = Arc::clone(&ended);
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                ended.store(true, Ordering::SeqCst);
            }
        };
        let cut = tokio::time::timeout(Duration::from_millis(1), run_to_end(work)).await;
        assert!(cut.is_err(), "the caller gave up first");
        for _ in 0..200 {
            if ended.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(ended.load(Ordering::SeqCst), "the dropped work never ended");
        let panicked = run_to_end(async { panic!("boom") }).await;
        assert!(matches!(panicked, Err(Panicked)));
        assert_eq!(run_to_end(async { 7 }).await.ok(), Some(7));
    }
}
