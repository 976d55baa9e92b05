//! Exhaustive checks of the two pieces of synchronisation the seeded simulation
//! only samples.
//!
//! Why not `loom`: the memory store locks `std::sync::Mutex` shards and bumps an
//! `AtomicU64`, and the guard's local wake-up uses `tokio::sync::Notify`. loom can
//! only explore code written against its own types; tokio's loom integration is
//! internal to tokio's test suite (built with `--cfg loom`) and not available to
//! downstream crates, so a loom model would have to re-implement `Notify` and swap
//! the store's primitives behind a cfg in the runtime. Instead, both pieces are
//! checked exhaustively against the *real* code:
//!
//! 1. **Store state machine** (`memory.rs`): every operation of every owner
//!    (claim/complete/release/renew, `forget`, time passing) from every reachable
//!    abstract state, executed on a real `MemoryStore` under a paused clock and
//!    compared with an independent specification; plus every sequence of up to
//!    five actions of two owners. Every shard update happens under its mutex in
//!    one call, so the sequential histories are its linearisations: checking all
//!    of them checks the store's atomicity contract.
//! 2. **Local wake-up** (`guard.rs` `wait_local` / `Inflight`): the atomic steps
//!    of a waiter and of one or two holders (register, deregister-if-mine,
//!    `notify_waiters`; look-up, `enable`, re-check) are run in every
//!    interleaving on a real map and real `tokio::sync::Notify`s, checking there is
//!    no lost wake-up: a waiter that decides to sleep is woken once its holder is
//!    gone.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use idem::Store;
use idem::fingerprint::Fingerprint;
use idem::store::memory::MemoryStore;
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState};
use tokio::sync::Notify;

// ---------------------------------------------------------------------------
// 1. The store state machine.

/// Time unit of the model: half a second of (paused) tokio time.
const HALF: Duration = Duration::from_millis(500);
const LEASE: u32 = 5; // 2.5 s
const TTL: u32 = 9; // 4.5 s
const TICK: u32 = 2; // 1 s: expiries never coincide with a tick
const KEY: &str = "model:key";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Action {
    Claim(u8),
    Complete(u8),
    Release(u8),
    Renew(u8),
    Forget,
    Tick,
}

fn actions(owners: u8) -> Vec<Action> {
    let mut v = Vec::new();
    for o in 1..=owners {
        v.extend([
            Action::Claim(o),
            Action::Complete(o),
            Action::Release(o),
            Action::Renew(o),
        ]);
    }
    v.extend([Action::Forget, Action::Tick]);
    v
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpecEntry {
    done: bool,
    owner: u8,
    fence: u64,
    expires: u32,
}

/// The contract of `Store`, written from DESIGN.md §3 (8, 9) and `store/mod.rs`.
#[derive(Debug, Clone, Default)]
struct Spec {
    now: u32,
    entry: Option<SpecEntry>,
    max_fence: u64,
}

impl Spec {
    fn live(&self) -> Option<SpecEntry> {
        self.entry.filter(|e| e.expires > self.now)
    }

    /// The abstract state: what the answers to future actions depend on.
    fn abstract_state(&self) -> Option<(bool, u8, i64)> {
        self.entry.map(|e| {
            let left = i64::from(e.expires) - i64::from(self.now);
            (e.done, e.owner, left.max(0))
        })
    }
}

fn owner(o: u8) -> Owner {
    Owner(u128::from(o))
}

/// Applies `a` to the real store and the spec; `Err` says how they disagree.
async fn step(store: &MemoryStore, spec: &mut Spec, a: Action) -> Result<(), String> {
    let now = spec.now;
    match a {
        Action::Claim(o) => {
            let got = store
                .claim(ClaimRequest {
                    key: KEY,
                    owner: owner(o),
                    fingerprint: Fingerprint::NONE,
                    lease: HALF * LEASE,
                })
                .await
                .map_err(|e| e.to_string())?;
            match (spec.live(), &got) {
                (Some(e), Claim::Done(rec)) if e.done => {
                    if rec.fence.get() != e.fence
                        || rec.owner != owner(e.owner)
                        || rec.payload != [e.owner]
                    {
                        return Err(format!("claim returned a foreign record {rec:?} for {e:?}"));
                    }
                }
                (Some(e), Claim::Claimed { fence }) if !e.done && e.owner == o => {
                    if fence.get() != e.fence {
                        return Err(format!(
                            "a retried claim got fence {fence:?}, not its own {}",
                            e.fence
                        ));
                    }
                }
                (Some(e), Claim::Busy { remaining, .. }) if !e.done && e.owner != o => {
                    if *remaining != HALF * (e.expires - now) {
                        return Err(format!(
                            "busy with {remaining:?} left, expected {:?}",
                            HALF * (e.expires - now)
                        ));
                    }
                }
                (None, Claim::Claimed { fence }) => {
                    if fence.get() <= spec.max_fence {
                        return Err(format!("new fence {fence:?} not above {}", spec.max_fence));
                    }
                    spec.max_fence = fence.get();
                    spec.entry = Some(SpecEntry {
                        done: false,
                        owner: o,
                        fence: fence.get(),
                        expires: now + LEASE,
                    });
                }
                (l, g) => return Err(format!("claim by {o} answered {g:?} in state {l:?}")),
            }
        }
        Action::Complete(o) => {
            let got = store
                .complete(KEY, owner(o), &[o], HALF * TTL)
                .await
                .map_err(|e| e.to_string())?;
            let want = match spec.live() {
                Some(e) if e.owner == o => Owned::Applied,
                _ => Owned::NotOwner,
            };
            if got != want {
                return Err(format!(
                    "complete by {o} answered {got:?}, spec {want:?} in {:?}",
                    spec.entry
                ));
            }
            if let Some(e) = spec
                .entry
                .as_mut()
                .filter(|e| !e.done && e.expires > now && e.owner == o)
            {
                e.done = true;
                e.expires = now + TTL;
            }
        }
        Action::Release(o) => {
            let got = store
                .release(KEY, owner(o))
                .await
                .map_err(|e| e.to_string())?;
            // Absent, or this owner's claim: Applied (idempotent after a lost reply).
            // A live record of someone else, or a finished one: NotOwner. An expired
            // record of someone else is logically absent: either answer is safe.
            let want = match spec.entry {
                None => Some(Owned::Applied),
                Some(e) if !e.done && e.owner == o => Some(Owned::Applied),
                Some(e) if e.expires <= now => None,
                Some(_) => Some(Owned::NotOwner),
            };
            if want.is_some_and(|w| w != got) {
                return Err(format!(
                    "release by {o} answered {got:?}, spec {want:?} in {:?}",
                    spec.entry
                ));
            }
            if got == Owned::Applied {
                spec.entry = None;
            }
        }
        Action::Renew(o) => {
            let got = store
                .renew(KEY, owner(o), HALF * LEASE)
                .await
                .map_err(|e| e.to_string())?;
            let want = match spec.live() {
                Some(e) if !e.done && e.owner == o => Owned::Applied,
                _ => Owned::NotOwner,
            };
            if got != want {
                return Err(format!(
                    "renew by {o} answered {got:?}, spec {want:?} in {:?}",
                    spec.entry
                ));
            }
            if let Some(e) = spec.entry.as_mut().filter(|_| want == Owned::Applied) {
                e.expires = now + LEASE;
            }
        }
        Action::Forget => {
            store.forget(KEY).await.map_err(|e| e.to_string())?;
            spec.entry = None;
        }
        Action::Tick => {
            tokio::time::advance(HALF * TICK).await;
            spec.now += TICK;
        }
    }
    // The operator's view agrees too.
    let seen = store.inspect(KEY).await.map_err(|e| e.to_string())?;
    let ok = match (spec.live(), &seen) {
        (None, None) => true,
        (
            Some(e),
            Some(RecordState::InProgress {
                owner: w,
                fence,
                remaining,
                ..
            }),
        ) => {
            !e.done
                && *w == owner(e.owner)
                && fence.get() == e.fence
                && *remaining == HALF * (e.expires - spec.now)
        }
        (Some(e), Some(RecordState::Done { record, remaining })) => {
            e.done && record.owner == owner(e.owner) && *remaining == HALF * (e.expires - spec.now)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "inspect shows {seen:?}, spec {:?} at {}",
            spec.entry, spec.now
        ))
    }
}

async fn replay(path: &[Action]) -> Result<Spec, String> {
    let store = MemoryStore::new();
    let mut spec = Spec::default();
    for (i, a) in path.iter().enumerate() {
        step(&store, &mut spec, *a)
            .await
            .map_err(|e| format!("after {:?}: {e}", &path[..=i]))?;
    }
    Ok(spec)
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

#[test]
fn model_memory_store_every_reachable_state_and_action() {
    paused_runtime().block_on(async {
        let acts = actions(3);
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([Vec::<Action>::new()]);
        seen.insert(Spec::default().abstract_state());
        let mut transitions = 0;
        while let Some(path) = queue.pop_front() {
            for a in &acts {
                let mut next = path.clone();
                next.push(*a);
                let spec = replay(&next).await.unwrap_or_else(|e| panic!("{e}"));
                transitions += 1;
                if seen.insert(spec.abstract_state()) {
                    queue.push_back(next);
                }
            }
        }
        // Absent, plus pending/done x 3 owners x every remaining life (0 = expired).
        assert!(seen.len() > 30, "only {} states reached", seen.len());
        assert_eq!(transitions, seen.len() * acts.len());
    });
}

#[test]
fn model_memory_store_every_sequence_of_five_actions() {
    paused_runtime().block_on(async {
        let acts = actions(2);
        let mut count = 0u64;
        let mut stack: Vec<Vec<Action>> = vec![Vec::new()];
        while let Some(path) = stack.pop() {
            if path.len() == 5 {
                replay(&path).await.unwrap_or_else(|e| panic!("{e}"));
                count += 1;
                continue;
            }
            for a in &acts {
                let mut next = path.clone();
                next.push(*a);
                stack.push(next);
            }
        }
        assert_eq!(count, 10u64.pow(5));
    });
}

// ---------------------------------------------------------------------------
// 2. The local wake-up: `Inflight` and `wait_local`.

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
