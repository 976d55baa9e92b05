//! Telling the caller of an annotated function how its call went.
//!
//! An `#[idempotent]` function returns what its signature says, `Result<T, E>`,
//! so the caller cannot see whether the value was executed now or replayed. The
//! HTTP layer needs exactly that (`Idempotent-Replayed: true`), and so does a
//! service that logs or bills differently for duplicates. Reading handle-wide
//! [`Stats`](super::Stats) cannot answer it for one request under concurrency.
//!
//! [`reported`] runs a future with a task-local slot; every guarded call made
//! inside it (through the one `instrument` wrapper, so every technique) writes
//! its [`CallReport`] there when it ends. The last call to end wins, so for a
//! function that calls other guarded functions inside its body, the report is the
//! outer call's. Outside `reported` a call only pays one failed task-local lookup.

use std::cell::Cell;
use std::future::Future;

use super::labels::CallOutcome;
use super::verdict::Verdict;
use crate::fence::Fence;

tokio::task_local! {
    static SLOT: Cell<Option<CallReport>>;
}

/// How one guarded call ended, as [`reported`] hands it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallReport {
    outcome: CallOutcome,
    backstop_hit: bool,
    fence: Option<Fence>,
}

impl CallReport {
    /// The outcome label: `executed`, `replayed`, `waited`, `backstop`,
    /// `degraded`, `not_stored`, `in_progress`, ... (see [`CallOutcome`]).
    pub fn outcome(&self) -> CallOutcome {
        self.outcome
    }

    /// The fence of the claim that produced the value, when the call returned one.
    pub fn fence(&self) -> Option<Fence> {
        self.fence
    }

    /// True when the business constraint caught a duplicate: `backstop` calls,
    /// and `degraded` calls whose body hit the constraint while the store was
    /// down (one call, counted as `degraded` and as a backstop hit).
    pub fn is_backstop_hit(&self) -> bool {
        self.backstop_hit
    }

    /// True when the value was not produced by this call's own body: replayed,
    /// waited for, loaded through the backstop (degraded or not), or a duplicate
    /// message skipped. What the HTTP layer answers with `Idempotent-Replayed: true`.
    pub fn is_replay(&self) -> bool {
        self.outcome.is_intercepted() || self.backstop_hit
    }
}

/// Runs `fut` and returns its output with the report of the last guarded call
/// that ended inside it (`None` when it made no guarded call).
///
/// ```
/// # use idem::{Idem, MemoryStore, Error, observe::{reported, CallOutcome}};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Error> {
/// let idem = Idem::builder().store(MemoryStore::new()).build()?;
/// let call = || idem.guard("pay", &[&"order-1"]).run(|| async { Ok::<_, Error>(7) });
/// let (_, first) = reported(call()).await;
/// let (_, again) = reported(call()).await;
/// assert_eq!(first.unwrap().outcome(), CallOutcome::Executed);
/// assert!(again.unwrap().is_replay());
/// # Ok(()) }
/// ```
pub async fn reported<F: Future>(fut: F) -> (F::Output, Option<CallReport>) {
    SLOT.scope(Cell::new(None), async {
        let out = fut.await;
        (out, SLOT.with(Cell::get))
    })
    .await
}

/// Writes the report of a call that just ended, if someone asked for it.
pub(crate) fn note(verdict: Verdict, fence: Option<Fence>) {
    let report = CallReport {
        outcome: verdict.outcome,
        backstop_hit: verdict.backstop_hit,
        fence,
    };
    let _ = SLOT.try_with(|slot| slot.set(Some(report)));
}
