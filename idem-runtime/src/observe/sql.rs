//! The `idem` span and counters for calls that may run without a handle (the
//! SQL helpers: optimistic and pessimistic locks, insert-once; the caller's-
//! transaction techniques count through `recorder_for`), under the one
//! fallback rule (`fallback::counted_under`).

use std::future::Future;

use super::fallback::counted_under;
use super::instrument::{Fenced, instrument};
use super::labels::{CallOutcome, Technique};
use super::recorder::Recorder;
use crate::key::Key;

/// A helper's view of a handle: where to count, and the namespace of its keys.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Observer<'h> {
    handle: Option<(&'h Recorder, &'h str)>,
}

impl<'h> Observer<'h> {
    pub(crate) fn of(recorder: &'h Recorder, namespace: &'h str) -> Self {
        Observer {
            handle: Some((recorder, namespace)),
        }
    }

    /// Runs `op` inside the `idem` span of `technique`, keyed `ns:table:key`.
    pub(crate) async fn run<R, F>(
        self,
        technique: Technique,
        table: &str,
        key: &str,
        op: impl FnOnce() -> F,
    ) -> R
    where
        R: Fenced,
        F: Future<Output = (CallOutcome, R)>,
    {
        let (recorder, ns) = counted_under(self.handle);
        let name = Key::from_parts(ns, table, &[&key]);
        instrument(recorder, technique, &name, op).await
    }
}
