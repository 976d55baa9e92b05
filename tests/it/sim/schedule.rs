//! A seeded schedule: which callers run when, what their bodies do, which faults
//! hit the store. Everything is drawn from one `SplitMix64` so a seed names a run.

use std::time::Duration;

use idem::{Concurrency, FaultPlan, Policy};

use super::rng::Rng;

/// What a body does once the guard lets it run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// Inserts the business row (with a backstop), waits, writes the fenced
    /// register, returns `Ok`.
    Ok,
    /// Waits, then fails with a transient error before any effect.
    Fail,
    /// Like `Ok`, but runs past the lease (and often past `max_hold`).
    Hang,
    /// Waits, then rejects the request (a terminal error where the key says so).
    Reject,
}

/// One guarded call.
#[derive(Debug, Clone)]
pub(crate) struct CallSpec {
    pub(crate) id: usize,
    pub(crate) proc: usize,
    pub(crate) key: usize,
    /// Start, from the beginning of the run.
    pub(crate) at: Duration,
    /// Request payload; a different one on the same key must be a mismatch.
    pub(crate) payload: u8,
    pub(crate) body: BodyKind,
    /// How long the body takes.
    pub(crate) body_time: Duration,
    /// The caller drops the call after this long (`tokio::time::timeout`).
    pub(crate) cancel_after: Option<Duration>,
}

/// The settings of one key (every call on a key shares them, as one function would).
#[derive(Debug, Clone)]
pub(crate) struct KeySpec {
    pub(crate) policy: Policy,
    /// Give `on_conflict` (otherwise a backstop hit is `Error::Duplicate`).
    pub(crate) on_conflict: bool,
    /// Declare `Reject` errors terminal (stored and replayed).
    pub(crate) terminal: bool,
}

impl KeySpec {
    pub(crate) fn backstop(&self) -> bool {
        self.policy.backstop.is_some()
    }
    pub(crate) fn wait_budget(&self) -> Duration {
        match self.policy.concurrent {
            Concurrency::Reject => Duration::ZERO,
            Concurrency::Wait => self.policy.wait.unwrap_or(self.policy.lease),
        }
    }
    pub(crate) fn max_hold(&self) -> Duration {
        self.policy.max_hold.unwrap_or(self.policy.lease * 20)
    }
}

/// Something that happens to the world at a point in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// The store refuses everything for a while.
    Outage(Duration),
    /// Every key the store has seen is lost (failover to an empty replica).
    LoseKeys,
    /// An operator `forget`s one key.
    Forget(usize),
    /// An operator runs `purge_expired`.
    Purge,
    /// A process dies: all its in-flight calls are dropped, its later store
    /// traffic is cut, and it restarts with a fresh handle.
    Crash(usize),
}

/// Time scales of generated schedules, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Profile {
    /// Drawn per key, never below [`LEASE_PER_OP_TIMEOUT`] × the op timeout.
    pub(crate) lease: (u64, u64),
    pub(crate) op_timeout: (u64, u64),
    pub(crate) cooldown: (u64, u64),
    /// Calls and events start within this much of the beginning.
    pub(crate) horizon: u64,
    /// A hung body runs up to this many leases.
    pub(crate) hang_leases: u64,
    pub(crate) delay_max: u64,
    pub(crate) outage_max: u64,
}

impl Profile {
    /// Virtual time costs nothing: long leases, long hangs, long outages.
    pub(crate) const VIRTUAL: Profile = Profile {
        lease: (1000, 3000),
        op_timeout: (100, 800),
        cooldown: (200, 2000),
        horizon: 6000,
        hang_leases: 5,
        delay_max: 1500,
        outage_max: 3000,
    };
    /// Real stores run in real time: the same shapes, compressed (leases stay >= 1 s).
    pub(crate) const REAL_TIME: Profile = Profile {
        lease: (1000, 1500),
        op_timeout: (300, 500),
        cooldown: (100, 500),
        horizon: 2000,
        hang_leases: 2,
        delay_max: 300,
        outage_max: 1000,
    };
}

/// Leases per operation timeout above which the handle's op timeout is the
/// call's operation budget; below it the guard clamps the budget to a third of
/// the lease (issue 10 A1), which half of the drawn keys exercise.
pub(crate) const LEASE_PER_OP_TIMEOUT: u32 = idem::policy::LEASE_PER_OP;

/// A whole simulated run.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub(crate) seed: u64,
    pub(crate) keys: Vec<KeySpec>,
    pub(crate) procs: usize,
    pub(crate) op_timeout: Duration,
    pub(crate) breaker: (u32, Duration),
    pub(crate) plan: Option<FaultPlan>,
    /// Replies delayed after the command applied: (percent of operations, max delay).
    /// A caller that times out meanwhile retries a command that already applied.
    pub(crate) reply_delay: Option<(u64, Duration)>,
    pub(crate) events: Vec<(Duration, Event)>,
    pub(crate) calls: Vec<CallSpec>,
}

impl Schedule {
    /// True when nothing but the callers themselves can disturb a claim: no store
    /// faults, no crash, no lost or forgotten keys.
    pub(crate) fn fault_free(&self) -> bool {
        self.plan.is_none() && self.reply_delay.is_none() && self.events.is_empty()
    }

    /// True when the only faults are blips: outages shorter than a third of every
    /// lease (renewal runs every third of a lease, so a blip costs at most one
    /// renewal) and than the operation budget (less 100 ms for the retry pauses,
    /// so a `complete` or `release` outlasts it), at least a lease and a budget
    /// apart (two blips in one window are one longer outage: seed 5022874). No
    /// blip may cost a running body its lease or a finished body its result.
    pub(crate) fn calm(&self) -> bool {
        self.reply_delay.is_none() && self.only_blips()
    }

    /// True when nothing may cost a live claim its lease: the calm schedules, and
    /// those whose only other fault is replies delayed after the command applied.
    /// A late reply changes what the caller knows, never what the store holds, so
    /// a running body must keep its lease through it: these schedules are where a
    /// lease timed from a claim's reply rather than its sending (issue 10 A1)
    /// shows as a second body run. The checks that a body runs once and keeps its
    /// lease (`no-double-run`, `renewal`) read these; `wait-liveness` keeps to calm
    /// runs, since a late reply may legitimately use up a waiter's budget.
    pub(crate) fn lease_safe(&self) -> bool {
        self.only_blips()
    }

    /// No fault plan, and no event but spaced blips (see [`Schedule::calm`]).
    fn only_blips(&self) -> bool {
        let longest = self.longest_blip();
        let max_lease = self
            .keys
            .iter()
            .map(|k| k.policy.lease)
            .max()
            .unwrap_or_default();
        let gap = max_lease.max(self.op_timeout);
        let mut free_from = Duration::ZERO;
        self.plan.is_none()
            && self.events.iter().all(|(at, e)| match e {
                Event::Outage(d) if *d < longest && *at >= free_from => {
                    free_from = *at + *d + gap;
                    true
                }
                _ => false,
            })
    }

    fn longest_blip(&self) -> Duration {
        let min_lease = self
            .keys
            .iter()
            .map(|k| k.policy.lease)
            .min()
            .unwrap_or_default();
        (min_lease / 3)
            .saturating_sub(Duration::from_millis(50))
            .min(self.op_timeout.saturating_sub(Duration::from_millis(100)))
    }

    /// Draws a schedule. Small on purpose: thousands of them run in CI.
    pub(crate) fn generate(seed: u64, backstops: bool) -> Schedule {
        Self::generate_with(seed, backstops, &Profile::VIRTUAL)
    }

    /// Draws a schedule with the time scales of `p`.
    pub(crate) fn generate_with(seed: u64, backstops: bool, p: &Profile) -> Schedule {
        let mut r = Rng::new(seed);
        let nkeys = r.range(1, 2) as usize;
        let procs = r.range(1, 3) as usize;
        let op_timeout = r.ms(p.op_timeout.0, p.op_timeout.1);
        let breaker = (r.range(1, 5) as u32, r.ms(p.cooldown.0, p.cooldown.1));
        let keys: Vec<KeySpec> = (0..nkeys)
            .map(|_| {
                // Half the keys have a lease of at least 3 op timeouts; the others
                // may be shorter, so the guard's clamp of the operation budget to
                // lease / 3 (issue 10 A1) is simulated too.
                let floor = if r.chance(50) {
                    (op_timeout * LEASE_PER_OP_TIMEOUT).as_millis() as u64
                } else {
                    0
                };
                let lease = r.ms(p.lease.0.max(floor), p.lease.1.max(floor));
                let backstop = backstops && r.chance(50);
                let policy = Policy {
                    ttl: if r.chance(20) {
                        lease + r.ms(1, 2000)
                    } else {
                        Duration::from_secs(3600)
                    },
                    lease,
                    wait: if r.chance(30) {
                        None
                    } else {
                        Some(r.ms(0, 4000))
                    },
                    max_hold: match r.range(0, 9) {
                        0..=2 => None,
                        // As short as the policy allows (max_hold < lease is refused):
                        // renewal never happens and the claim lapses with its lease.
                        3 => Some(r.ms(1, lease.as_millis() as u64).max(lease)),
                        _ => Some(lease + r.ms(0, 3 * lease.as_millis() as u64)),
                    },
                    concurrent: if r.chance(20) {
                        Concurrency::Reject
                    } else {
                        Concurrency::Wait
                    },
                    version: 1,
                    degrade: backstop && r.chance(50),
                    degrade_local: false,
                    backstop: backstop.then_some("uk_sim".into()),
                };
                KeySpec {
                    policy,
                    on_conflict: r.chance(80),
                    terminal: r.chance(50),
                }
            })
            .collect();
        let ncalls = r.range(2, 8) as usize;
        let horizon = p.horizon;
        let mut last_at = Duration::ZERO;
        let calls = (0..ncalls)
            .map(|id| {
                let key = r.range(0, nkeys as u64 - 1) as usize;
                let lease = keys[key].policy.lease.as_millis() as u64;
                let body = match r.range(0, 9) {
                    0..=4 => BodyKind::Ok,
                    5 | 6 => BodyKind::Fail,
                    7 => BodyKind::Reject,
                    _ => BodyKind::Hang,
                };
                let body_time = match body {
                    BodyKind::Hang => r.ms(lease + 1, p.hang_leases * lease),
                    _ => r.ms(0, lease / 2),
                };
                CallSpec {
                    id,
                    proc: r.range(0, procs as u64 - 1) as usize,
                    key,
                    at: {
                        last_at = match r.range(0, 9) {
                            0..=2 => Duration::ZERO,
                            3 | 4 => last_at,
                            _ => r.ms(0, horizon),
                        };
                        last_at
                    },
                    payload: u8::from(r.chance(8)),
                    body,
                    body_time,
                    cancel_after: match r.range(0, 9) {
                        0 => Some(r.ms(0, 100)),
                        1 => Some(r.ms(0, 2 * lease)),
                        _ => None,
                    },
                }
            })
            .collect();
        // One schedule in five only has short outages ("blips", each shorter than a
        // third of the shortest lease): they may fail calls, but must never cost a
        // running body its lease (see `calm`).
        if r.chance(20) {
            let min_lease = keys
                .iter()
                .map(|k| k.policy.lease)
                .min()
                .unwrap_or_default();
            let longest = (min_lease / 3)
                .saturating_sub(Duration::from_millis(60))
                .min(op_timeout.saturating_sub(Duration::from_millis(110)))
                .max(Duration::from_millis(10));
            let max_lease = keys
                .iter()
                .map(|k| k.policy.lease)
                .max()
                .unwrap_or_default();
            let gap = max_lease.max(op_timeout);
            // Mostly spaced blips (calm); sometimes bunched ones (not calm, and
            // then only the unconditional invariants apply).
            let bunched = r.chance(20);
            let mut at = r.ms(0, horizon / 2);
            let mut events = Vec::new();
            for _ in 0..r.range(1, 3) {
                let d = r.ms(10, longest.as_millis() as u64);
                events.push((at, Event::Outage(d)));
                at += d + if bunched {
                    r.ms(0, 300)
                } else {
                    gap + r.ms(1, 1000)
                };
            }
            return Schedule {
                seed,
                keys,
                procs,
                op_timeout,
                breaker,
                plan: None,
                reply_delay: None,
                events,
                calls,
            };
        }
        let plan = r.chance(50).then(|| FaultPlan {
            seed: r.next_u64(),
            unavailable: r.range(0, 15) as f64 / 100.0,
            lost_reply: r.range(0, 15) as f64 / 100.0,
            lost_key: r.range(0, 5) as f64 / 100.0,
            slow: r.range(0, 20) as f64 / 100.0,
            delay: r.ms(1, p.delay_max),
        });
        let reply_delay = r.chance(25).then(|| (r.range(5, 40), r.ms(1, p.delay_max)));
        let mut events = Vec::new();
        let nevents = if r.chance(50) { 0 } else { r.range(1, 3) };
        for _ in 0..nevents {
            let at = r.ms(0, horizon);
            let ev = match r.range(0, 4) {
                0 => Event::Outage(r.ms(100, p.outage_max)),
                1 => Event::LoseKeys,
                2 => Event::Forget(r.range(0, nkeys as u64 - 1) as usize),
                3 => Event::Purge,
                _ => Event::Crash(r.range(0, procs as u64 - 1) as usize),
            };
            events.push((at, ev));
        }
        events.sort_by_key(|e| e.0);
        Schedule {
            seed,
            keys,
            procs,
            op_timeout,
            breaker,
            plan,
            reply_delay,
            events,
            calls,
        }
    }
}
