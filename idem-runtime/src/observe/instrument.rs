//! The one wrapper every technique puts around a guarded operation: the `idem`
//! span (DEBUG; technique, scope, key hash, outcome, fence), the `idem_calls_total` counter,
//! the in-process [`Stats`](super::Stats) and the top-K. A technique computes its
//! outcome; it never records one itself, so every technique reports the same way.

use std::future::Future;

use tracing::Instrument;

use super::labels::Technique;
use super::recorder::Recorder;
use super::verdict::Verdict;
use crate::fence::Fence;
use crate::key::Key;
use crate::outcome::Outcome;

/// What an instrumented operation hands back, as the span sees it: the fence of
/// the claim it ran under, when there was one and the call succeeded.
pub(crate) trait Fenced {
    fn fence(&self) -> Option<Fence>;
}

impl<T, E> Fenced for Result<Outcome<T>, E> {
    fn fence(&self) -> Option<Fence> {
        self.as_ref().ok().map(Outcome::fence)
    }
}

/// Runs the operation `op` starts inside the `idem` span, records its outcome
/// (and fence) on the span and counts the call; returns the operation's value.
/// The operation reports a [`CallOutcome`](super::CallOutcome), or a [`Verdict`] when the outcome
/// alone does not say whether the constraint caught a duplicate (a degraded call).
///
/// ```text
/// observe::instrument(&recorder, Technique::Lock, &key, || async {
///     (CallOutcome::LockBusy, Err::<LockGuard, Error>(..)) // LockGuard: Fenced
/// }).await
/// ```
///
/// `op` is a closure, not a future: an `async fn` stores its arguments beside
/// the futures it awaits, so a future argument would be held twice (the guard's
/// call future doubled, 1.6 to 3.2 kB, when `execute` passed one).
pub(crate) async fn instrument<R, V, F>(
    recorder: &Recorder,
    technique: Technique,
    key: &Key,
    op: impl FnOnce() -> F,
) -> R
where
    F: Future<Output = (V, R)>,
    V: Into<Verdict>,
    R: Fenced,
{
    // DEBUG: one span per call is too many for a default INFO log, and a
    // service's own request span already says a request happened; turn it on
    // with `idem=debug` to see how each call went.
    let span = tracing::debug_span!(
        "idem",
        technique = technique.as_str(),
        scope = key.scope(),
        key = tracing::field::Empty,
        outcome = tracing::field::Empty,
        fence = tracing::field::Empty,
    );
    // No subscriber wants the span: skip entering and leaving it on every poll
    // (and the `log`-compatibility activity records that would go with it).
    let (verdict, value) = if span.is_disabled() {
        let (v, value) = op().await;
        (v.into(), value)
    } else {
        // The key's hash unless the handle opted in to raw keys (see `redact`).
        if recorder.raw_keys() {
            span.record("key", key.as_str());
        } else {
            span.record(
                "key",
                tracing::field::display(super::key_hash(key.as_str())),
            );
        }
        let (v, value) = op().instrument(span.clone()).await;
        let verdict: Verdict = v.into();
        span.record("outcome", verdict.outcome.as_str());
        if let Some(fence) = value.fence() {
            span.record("fence", fence.get());
        }
        #[cfg(feature = "otel")]
        super::otel::idem_attrs(&span, technique, key, verdict.outcome, value.fence());
        (verdict, value)
    };
    recorder.record(technique, key.scope(), key.as_str(), verdict);
    super::report::note(verdict, value.fence());
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::observe::CallOutcome;
    use crate::observe::testing::SpanFields;
    use crate::outcome::How;

    fn key() -> Key {
        Key::from_parts("shop", "pay", &[&"k1"])
    }

    /// The span carries every documented field, outcome and fence included, and
    /// the call is counted under its outcome and its key enters the top-K.
    #[test]
    fn span_fields_and_counts() {
        let rec = Recorder::default();
        rec.set_raw_keys(true);
        let fields = SpanFields::default();
        let key = key();
        let v = tracing::subscriber::with_default(fields.clone(), || {
            futures_block_on(instrument(&rec, Technique::Idempotent, &key, || async {
                let value = Outcome::new(42u8, How::Replayed, Fence::new(7));
                (CallOutcome::Replayed, Ok::<_, Error>(value))
            }))
        });
        assert_eq!(v.unwrap().into_inner(), 42);
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

    /// By default the span carries the key's hash, never the key or its parts.
    #[test]
    fn the_key_is_hashed_by_default() {
        let rec = Recorder::default();
        let fields = SpanFields::default();
        let key = Key::from_parts("shop", "pay", &[&"alice@example.com"]);
        tracing::subscriber::with_default(fields.clone(), || {
            futures_block_on(instrument(&rec, Technique::Idempotent, &key, || async {
                let value = Outcome::new(1u8, How::Executed, Fence::new(1));
                (CallOutcome::Executed, Ok::<_, Error>(value))
            }))
        })
        .unwrap();
        let got = fields.take();
        let hash = crate::observe::key_hash(key.as_str()).to_string();
        assert!(
            got.iter().any(|(n, v)| *n == "key" && *v == hash),
            "{got:?}"
        );
        assert!(!got.iter().any(|(_, v)| v.contains("alice")), "{got:?}");
    }

    /// A failed call records no fence; without a subscriber the call is still
    /// counted.
    #[test]
    fn no_fence_and_no_subscriber() {
        let rec = Recorder::default();
        let fields = SpanFields::default();
        let key = key();
        let r = tracing::subscriber::with_default(fields.clone(), || {
            futures_block_on(instrument(&rec, Technique::Lock, &key, || async {
                (
                    CallOutcome::LockBusy,
                    Err::<Outcome<()>, _>(Error::NotInstalled),
                )
            }))
        });
        assert!(matches!(r, Err(Error::NotInstalled)));
        let got = fields.take();
        assert!(got.iter().any(|(n, v)| *n == "outcome" && v == "lock_busy"));
        assert!(got.iter().any(|(n, v)| *n == "technique" && v == "lock"));
        assert!(!got.iter().any(|(n, _)| *n == "fence"), "{got:?}");
        let value = Outcome::new((), How::Executed, Fence::new(1));
        let r = futures_block_on(instrument(&rec, Technique::Lock, &key, || async {
            (CallOutcome::Executed, Ok::<_, Error>(value))
        }));
        assert_eq!(r.unwrap().fence(), Fence::new(1));
        let s = rec.snapshot();
        assert_eq!((s.count("lock_busy"), s.count("executed")), (1, 1));
    }

    /// The wrapper holds the operation's future once: every guarded call's future
    /// carries it, and a future taken by value would be stored twice.
    #[test]
    fn the_operation_future_is_held_once() {
        let rec = Recorder::default();
        let key = key();
        let op = || async {
            let buf = [7u8; 4096];
            tokio::task::yield_now().await;
            let value = Outcome::new(buf[4095], How::Executed, Fence::new(1));
            (CallOutcome::Executed, Ok::<_, Error>(value))
        };
        let alone = std::mem::size_of_val(&op());
        let wrapped = instrument(&rec, Technique::Idempotent, &key, op);
        let size = std::mem::size_of_val(&wrapped);
        assert!(
            size < alone + 512,
            "{size} bytes around a {alone}-byte operation"
        );
        assert_eq!(futures_block_on(wrapped).unwrap().into_inner(), 7);
    }

    fn futures_block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }
}
