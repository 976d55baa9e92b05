//! The `idem` span and counters for the SQL helpers that may run without a
//! handle (optimistic and pessimistic locks, insert-once): counted under the
//! given handle's recorder, else a process-wide one (the `metrics` facade
//! sees every call either way).

use std::future::Future;
use std::sync::OnceLock;

use super::instrument::{Fenced, instrument};
use super::labels::{CallOutcome, Technique};
use super::recorder::Recorder;
use crate::key::Key;

/// Counts helper calls made without a handle.
static UNHANDLED: OnceLock<Recorder> = OnceLock::new();

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
        let (recorder, ns) = self
            .handle
            .unwrap_or_else(|| (UNHANDLED.get_or_init(Recorder::default), ""));
        let name = Key::from_parts(ns, table, &[&key]);
        instrument(recorder, technique, &name, op).await
    }
}
