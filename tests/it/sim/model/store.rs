//! The store state machine, every reachable state and every short sequence,
//! on a real `MemoryStore` against an independent specification.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use idem::Store;
use idem::fingerprint::Fingerprint;
use idem::store::memory::MemoryStore;
use idem::store::{Claim, ClaimRequest, Owned, Owner, RecordState};

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
        // Absent, plus 3 owners x (pending with 5, 3, 1 or 0 half-seconds left, or
        // done with 9, 7, 5, 3, 1 or 0 left; 0 = expired): 1 + 3 x (4 + 6).
        println!(
            "store model: {} abstract states, {transitions} transitions",
            seen.len()
        );
        assert_eq!(seen.len(), 31, "states reached");
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
