//! The guard's local wake-up (`Inflight` and `wait_local`), every interleaving
//! of its atomic steps on a real map and real `tokio::sync::Notify`s.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;

type Map = Mutex<HashMap<&'static str, Arc<Notify>>>;

/// One atomic step of a participant; each mirrors a critical section of guard.rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WStep {
    /// `wait_local`: look the key up and clone its `Notify` (or return false).
    Lookup,
    /// `notified.as_mut().enable()`.
    Enable,
    /// Re-check the map still holds the same `Notify` (else return true).
    Recheck,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HStep {
    /// `Inflight::register`: insert (replacing a lapsed holder's entry).
    Register,
    /// `Inflight::drop`: remove the entry if it is still ours.
    Deregister,
    /// `Inflight::drop`: `notify_waiters()` after the lock is released.
    Notify,
}

const W_STEPS: [WStep; 3] = [WStep::Lookup, WStep::Enable, WStep::Recheck];
const H_STEPS: [HStep; 3] = [HStep::Register, HStep::Deregister, HStep::Notify];

#[derive(Debug, PartialEq, Eq)]
enum WaitOutcome {
    /// No local holder: the caller polls the store.
    Poll,
    /// The holder changed before `enable`: claim again at once.
    Retry,
    /// Sleeping on this holder's `Notify`.
    Sleep,
}

struct Waiter<'n> {
    notify: Option<Arc<Notify>>,
    notified: Option<std::pin::Pin<Box<tokio::sync::futures::Notified<'n>>>>,
    outcome: Option<WaitOutcome>,
}

/// Runs one interleaving: `order` lists participants (0 = waiter(s) first, then
/// holders) in the order their next step runs.
fn run_interleaving(waiters: usize, holders: usize, order: &[usize]) -> Result<(), String> {
    let map: Map = Mutex::new(HashMap::new());
    let notifies: Vec<Arc<Notify>> = (0..holders).map(|_| Arc::new(Notify::new())).collect();
    let mut ws: Vec<Waiter<'_>> = (0..waiters)
        .map(|_| Waiter {
            notify: None,
            notified: None,
            outcome: None,
        })
        .collect();
    let mut pc = vec![0usize; waiters + holders];
    for &p in order {
        let i = pc[p];
        pc[p] += 1;
        if p < waiters {
            let w = &mut ws[p];
            if w.outcome.is_some() {
                continue;
            }
            match W_STEPS[i] {
                WStep::Lookup => match map.lock().unwrap_or_else(|e| e.into_inner()).get("k") {
                    Some(n) => w.notify = Some(Arc::clone(n)),
                    None => w.outcome = Some(WaitOutcome::Poll),
                },
                WStep::Enable => {
                    let looked_up = w.notify.as_ref().expect("looked up");
                    // Borrow the holder's own `Notify` (the same one as the clone).
                    let n = notifies
                        .iter()
                        .find(|n| Arc::ptr_eq(n, looked_up))
                        .expect("a holder's notify");
                    let mut f = Box::pin(n.notified());
                    f.as_mut().enable();
                    w.notified = Some(f);
                }
                WStep::Recheck => {
                    let same = map
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get("k")
                        .is_some_and(|n| Arc::ptr_eq(n, w.notify.as_ref().expect("looked up")));
                    w.outcome = Some(if same {
                        WaitOutcome::Sleep
                    } else {
                        WaitOutcome::Retry
                    });
                }
            }
        } else {
            let h = p - waiters;
            let mine = &notifies[h];
            match H_STEPS[i] {
                HStep::Register => {
                    map.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert("k", Arc::clone(mine));
                }
                HStep::Deregister => {
                    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
                    if m.get("k").is_some_and(|n| Arc::ptr_eq(n, mine)) {
                        m.remove("k");
                    }
                }
                HStep::Notify => mine.notify_waiters(),
            }
        }
    }
    // Every holder is gone: nobody may still be sleeping unwoken, and the map is empty.
    if !map.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
        return Err("a finished holder left its entry in the map".into());
    }
    let mut cx = Context::from_waker(Waker::noop());
    for (i, w) in ws.iter_mut().enumerate() {
        if w.outcome == Some(WaitOutcome::Sleep) {
            let f = w.notified.as_mut().expect("enabled before sleeping");
            if f.as_mut().poll(&mut cx) != Poll::Ready(()) {
                return Err(format!(
                    "waiter {i} sleeps on a holder that is gone (lost wake-up)"
                ));
            }
        }
    }
    Ok(())
}

/// Every interleaving of `counts[p]` steps per participant, in lexicographic order.
fn interleavings(
    counts: &[usize],
    prefix: &mut Vec<usize>,
    left: &mut [usize],
    out: &mut Vec<Vec<usize>>,
) {
    if left.iter().all(|l| *l == 0) {
        out.push(prefix.clone());
        return;
    }
    for p in 0..counts.len() {
        if left[p] > 0 {
            left[p] -= 1;
            prefix.push(p);
            interleavings(counts, prefix, left, out);
            prefix.pop();
            left[p] += 1;
        }
    }
}

fn check_all(waiters: usize, holders: usize) -> usize {
    let counts = vec![3; waiters + holders];
    let mut all = Vec::new();
    interleavings(&counts, &mut Vec::new(), &mut counts.clone(), &mut all);
    for order in &all {
        if let Err(e) = run_interleaving(waiters, holders, order) {
            panic!("interleaving {order:?}: {e}");
        }
    }
    all.len()
}

#[test]
fn model_local_wake_up_has_no_lost_wake_up() {
    // One waiter; a holder, and a second holder that took over after the first's
    // lease lapsed (it replaces the map entry): 9!/(3!3!3!) interleavings.
    assert_eq!(check_all(1, 2), 1680);
    // Two waiters on one holder.
    assert_eq!(check_all(2, 1), 1680);
}

/// The model can fail: without the re-check after `enable`, a holder that leaves
/// between the look-up and `enable` is never noticed and its waiter sleeps for
/// its whole budget.
#[test]
fn model_local_wake_up_detects_a_lost_wake_up() {
    // Waiter looks up, holder deregisters and notifies, waiter enables and (without
    // the re-check) sleeps.
    let map: Map = Mutex::new(HashMap::new());
    let n = Arc::new(Notify::new());
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert("k", Arc::clone(&n));
    let looked_up = map
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get("k")
        .cloned();
    map.lock().unwrap_or_else(|e| e.into_inner()).remove("k");
    n.notify_waiters();
    let looked_up = looked_up.expect("registered");
    let mut f = pin!(looked_up.notified());
    f.as_mut().enable();
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        f.as_mut().poll(&mut cx),
        Poll::Pending,
        "the wake-up was lost"
    );
    // ... which is exactly what the re-check catches:
    let run = run_interleaving(1, 1, &[1, 0, 1, 1, 0, 0]);
    assert!(run.is_ok(), "{run:?}");
}
