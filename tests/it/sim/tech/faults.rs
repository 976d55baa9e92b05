//! The guard's faults for the token and state stores, which `FaultyStore`
//! passes through untouched (its plan covers records only).
//!
//! ```text
//! Idem (one per process) -> ProcTech (cut when the process crashes)
//!     -> Shared: seeded faults -> log of what applied -> MemoryTokens / MemoryStates
//! ```
//! A fault is drawn per operation: refused before it applies (unavailable, or
//! an outage), delayed before it applies (slow), delayed after it applied (a
//! late reply), or applied with its reply lost. `flushall` swaps in empty
//! stores (a failover to an empty replica). Every application is logged with
//! the call it belongs to ([`CALL`], a task-local the harness sets).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::store::memory::MemoryStore;
use idem::store::state::{MemoryStates, StateCas};
use idem::store::token::TokenTake;
use idem::store::token::memory::MemoryTokens;
use idem::store::{Owned, Owner, StoreError};
use tokio::time::Instant;

use crate::sim::rng::Rng;

tokio::task_local! {
    /// The simulated call the current task works for.
    pub(crate) static CALL: usize;
}

/// Per-operation fault chances, in percent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mix {
    pub(crate) unavailable: u64,
    pub(crate) lost_reply: u64,
    pub(crate) slow: u64,
    pub(crate) late: u64,
    pub(crate) delay_max: Duration,
}

impl Mix {
    pub(crate) fn draw(r: &mut Rng) -> Mix {
        Mix {
            unavailable: r.range(0, 15),
            lost_reply: r.range(0, 20),
            slow: r.range(0, 20),
            late: r.range(0, 25),
            delay_max: r.ms(1, 1500),
        }
    }
}

/// One application, as the store saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum What {
    Take { owner: Owner, res: TokenTake },
    GiveBack { owner: Owner, res: Owned },
    Cas { to: String, res: StateCas },
}

#[derive(Debug, Clone)]
pub(crate) struct Applied {
    pub(crate) t: Duration,
    pub(crate) key: String,
    pub(crate) call: Option<usize>,
    pub(crate) what: What,
}

/// What the fault layer did, for the tallies.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) refused: u64,
    pub(crate) lost_replies: u64,
    pub(crate) late: u64,
}

/// The stores all processes share, and the faults between them and the stores.
pub(crate) struct Shared {
    pub(crate) tokens: Mutex<Arc<MemoryTokens>>,
    pub(crate) states: Mutex<Arc<MemoryStates>>,
    pub(crate) records: MemoryStore,
    mix: Mutex<Option<Mix>>,
    rng: Mutex<Rng>,
    down: AtomicBool,
    /// The next this many applications lose their reply.
    lose_next: Mutex<u64>,
    log: Mutex<Vec<Applied>>,
    counts: Mutex<Counts>,
    epoch: Instant,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Fate {
    refuse: bool,
    before: Duration,
    after: Duration,
    lose: bool,
}

impl Shared {
    pub(crate) fn new(seed: u64) -> Arc<Shared> {
        Arc::new(Shared {
            tokens: Mutex::default(),
            states: Mutex::default(),
            records: MemoryStore::new(),
            mix: Mutex::new(None),
            rng: Mutex::new(Rng::new(seed ^ 0x5151_7eed)),
            down: AtomicBool::new(false),
            lose_next: Mutex::new(0),
            log: Mutex::default(),
            counts: Mutex::default(),
            epoch: Instant::now(),
        })
    }

    pub(crate) fn now(&self) -> Duration {
        Instant::now() - self.epoch
    }

    pub(crate) fn set_mix(&self, mix: Option<Mix>) {
        *lock(&self.mix) = mix;
    }

    /// The next `n` operations that apply lose their reply.
    pub(crate) fn lose_next_replies(&self, n: u64) {
        *lock(&self.lose_next) = n;
    }

    pub(crate) fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Every token and state is lost.
    pub(crate) fn flushall(&self) {
        *lock(&self.tokens) = Arc::default();
        *lock(&self.states) = Arc::default();
    }

    pub(crate) fn log(&self) -> Vec<Applied> {
        lock(&self.log).clone()
    }

    pub(crate) fn counts(&self) -> Counts {
        *lock(&self.counts)
    }

    /// The token store as it is now, without faults (the harness's own reads).
    pub(crate) fn raw_tokens(&self) -> Arc<MemoryTokens> {
        Arc::clone(&lock(&self.tokens))
    }

    fn fate(&self) -> Fate {
        let refuse = self.down.load(Ordering::SeqCst);
        let mut f = Fate {
            refuse,
            before: Duration::ZERO,
            after: Duration::ZERO,
            lose: false,
        };
        {
            let mut n = lock(&self.lose_next);
            if *n > 0 && !refuse {
                *n -= 1;
                f.lose = true;
                lock(&self.counts).lost_replies += 1;
                return f;
            }
        }
        let Some(m) = *lock(&self.mix) else {
            return f;
        };
        let mut r = lock(&self.rng);
        let mut c = lock(&self.counts);
        if r.chance(m.unavailable) {
            f.refuse = true;
        }
        if r.chance(m.slow) {
            f.before = r.ms(1, m.delay_max.as_millis() as u64);
        }
        if r.chance(m.late) {
            f.after = r.ms(1, m.delay_max.as_millis() as u64);
            c.late += 1;
        }
        if r.chance(m.lost_reply) {
            f.lose = true;
        }
        if f.refuse {
            c.refused += 1;
        } else if f.lose {
            c.lost_replies += 1;
        }
        f
    }
}

/// One process's connection: every operation goes through the faults, and a
/// crashed process's (cut) reaches nothing, as with a real crash.
pub(crate) struct ProcTech {
    pub(crate) shared: Arc<Shared>,
    cut: Arc<AtomicBool>,
}

impl ProcTech {
    pub(crate) fn new(shared: &Arc<Shared>) -> (Arc<ProcTech>, Arc<AtomicBool>) {
        let cut = Arc::new(AtomicBool::new(false));
        let p = ProcTech {
            shared: Arc::clone(shared),
            cut: Arc::clone(&cut),
        };
        (Arc::new(p), cut)
    }

    pub(crate) fn crashed(&self) -> Result<(), StoreError> {
        if self.cut.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("process crashed".into()))
        } else {
            Ok(())
        }
    }

    /// `apply` runs (and its result is logged as `what`) only if the fault
    /// drawn lets it; a lost reply is lost after it applied.
    pub(crate) async fn run<T, F>(
        &self,
        key: &str,
        apply: impl FnOnce(&Shared) -> F,
        what: impl FnOnce(&T) -> What,
    ) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = Result<T, StoreError>>,
    {
        self.crashed()?;
        let fate = self.shared.fate();
        if !fate.before.is_zero() {
            tokio::time::sleep(fate.before).await;
        }
        self.crashed()?;
        if fate.refuse {
            return Err(StoreError::Unavailable("injected fault: store down".into()));
        }
        let r = apply(&self.shared).await;
        if let Ok(v) = &r {
            let e = Applied {
                t: self.shared.now(),
                key: key.to_owned(),
                call: CALL.try_with(|c| *c).ok(),
                what: what(v),
            };
            lock(&self.shared.log).push(e);
        }
        if !fate.after.is_zero() {
            tokio::time::sleep(fate.after).await;
        }
        if fate.lose {
            return Err(StoreError::Unavailable("injected fault: reply lost".into()));
        }
        r
    }
}
