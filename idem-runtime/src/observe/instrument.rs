//! The one wrapper every technique puts around a guarded operation: the `idem`
//! span (technique, scope, key, outcome, fence), the `idem_calls_total` counter,
//! the in-process [`Stats`](super::Stats) and the top-K. A technique computes its
//! outcome; it never records one itself, so every technique reports the same way.

use std::future::Future;

use tracing::Instrument;

use super::labels::{CallOutcome, Technique};
use super::recorder::Recorder;
use crate::fence::Fence;
use crate::key::Key;

/// What an instrumented operation yields: its outcome label, the fence of the
/// claim it ran under (when there was one), and the value handed to the caller.
#[derive(Debug)]
pub(crate) struct Instrumented<R> {
    pub(crate) outcome: CallOutcome,
    pub(crate) fence: Option<Fence>,
    pub(crate) value: R,
}

/// Runs `op` inside the `idem` span and counts its outcome.
///
/// ```text
/// observe::instrument(&recorder, Technique::Lock, &key, async {
///     Instrumented { outcome: CallOutcome::LockBusy, fence: None, value: Err(..) }
/// }).await
/// ```
pub(crate) async fn instrument<R, F>(
    recorder: &Recorder,
    technique: Technique,
    key: &Key,
    op: F,
) -> R
where
    F: Future<Output = Instrumented<R>>,
{
    let span = tracing::info_span!(
        "idem",
        technique = technique.as_str(),
        scope = key.scope(),
        key = key.as_str(),
        outcome = tracing::field::Empty,
        fence = tracing::field::Empty,
    );
    // No subscriber wants the span: skip entering and leaving it on every poll
    // (and the `log`-compatibility activity records that would go with it).
    let done = if span.is_disabled() {
        op.await
    } else {
        let done = op.instrument(span.clone()).await;
        span.record("outcome", done.outcome.as_str());
        if let Some(fence) = done.fence {
            span.record("fence", fence.get());
        }
        done
    };
    recorder.record(technique, key.scope(), key.as_str(), done.outcome);
    done.value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::testing::SpanFields;

    fn key() -> Key {
        Key::from_parts("shop", "pay", &[&"k1"])
    }

    /// The span carries every documented field, outcome and fence included, and
    /// the call is counted under its outcome and its key enters the top-K.
    #[test]
    fn span_fields_and_counts() {
        let rec = Recorder::default();
        let fields = SpanFields::default();
        let key = key();
        let v = tracing::subscriber::with_default(fields.clone(), || {
            futures_block_on(instrument(&rec, Technique::Idempotent, &key, async {
                Instrumented {
                    outcome: CallOutcome::Replayed,
                    fence: Some(Fence::new(7)),
                    value: 42u8,
                }
            }))
        });
        assert_eq!(v, 42);
        let got = fields.take();
        for want in [
            ("technique", "idempotent".to_owned()),
            ("scope", key.scope().to_owned()),
            ("key", key.as_str().to_owned()),
            ("outcome", "replayed".to_owned()),
            ("fence", "7".to_owned()),
        ] {
            assert!(
                got.iter().any(|(n, v)| *n == want.0 && *v == want.1),
                "{want:?} in {got:?}"
            );
        }
        let s = rec.snapshot();
        assert_eq!(s.count("replayed"), 1);
        assert_eq!(s.calls(), 1);
        assert_eq!(s.top_keys[0].key, key.as_str());
    }

    /// Without a fence nothing is recorded for it; without a subscriber the call
    /// is still counted.
    #[test]
    fn no_fence_and_no_subscriber() {
        let rec = Recorder::default();
        let fields = SpanFields::default();
        let key = key();
        tracing::subscriber::with_default(fields.clone(), || {
            futures_block_on(instrument(&rec, Technique::Lock, &key, async {
                Instrumented {
                    outcome: CallOutcome::LockBusy,
                    fence: None,
                    value: (),
                }
            }))
        });
        let got = fields.take();
        assert!(got.iter().any(|(n, v)| *n == "outcome" && v == "lock_busy"));
        assert!(got.iter().any(|(n, v)| *n == "technique" && v == "lock"));
        assert!(!got.iter().any(|(n, _)| *n == "fence"), "{got:?}");
        futures_block_on(instrument(&rec, Technique::Lock, &key, async {
            Instrumented {
                outcome: CallOutcome::Executed,
                fence: Some(Fence::new(1)),
                value: (),
            }
        }));
        let s = rec.snapshot();
        assert_eq!((s.count("lock_busy"), s.count("executed")), (1, 1));
    }

    fn futures_block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }
}
