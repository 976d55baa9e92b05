//! What happened in a run, in virtual time: calls, body runs, business effects
//! (the simulated database), and the store operations as they applied.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::How;
use idem::store::{Claim, Owned, Owner};
use tokio::time::Instant;

/// How a call ended, reduced to what the invariants look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallResult {
    Ok {
        how: How,
        value: u64,
        fence: u64,
    },
    Err(ErrKind),
    /// The caller dropped the future (`timeout`).
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrKind {
    /// The body's own transient failure.
    Transient,
    /// The body's terminal business error carrying this value (own or replayed).
    Rejected(u64),
    /// The body's unique violation, returned as is (no backstop configured).
    Unique,
    /// `on_conflict` found no row.
    NoRow,
    InProgress,
    Mismatch,
    Duplicate,
    StoreUnavailable,
    Other(String),
}

/// How a body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyOut {
    Ok,
    /// Transient failure, before any effect.
    Fail,
    /// The constrained insert hit the unique key.
    Unique,
    /// A business rejection: terminal where the key declares it.
    Rejected,
}

/// One thing that happened, with the call it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ev {
    CallStart {
        call: usize,
    },
    BodyStart {
        call: usize,
        fence: u64,
    },
    /// The body's first effect: the insert into the table with the unique key.
    Insert {
        call: usize,
        ok: bool,
    },
    /// The body's fenced write: accepted only if its fence >= the stored one.
    FencedWrite {
        call: usize,
        fence: u64,
        accepted: bool,
    },
    BodyEnd {
        call: usize,
        out: BodyOut,
    },
    CallEnd {
        call: usize,
        result: CallResult,
        elapsed: Duration,
    },
    /// The call was in flight when its process crashed.
    Crashed {
        call: usize,
    },
}

/// A store operation as the wrapped store applied it.
#[derive(Debug, Clone)]
pub(crate) enum StoreOp {
    Claim {
        owner: Owner,
        fingerprint: [u8; 16],
        lease: Duration,
        res: Result<Claim, String>,
    },
    Complete {
        owner: Owner,
        ttl: Duration,
        payload: Vec<u8>,
        res: Result<Owned, String>,
    },
    Release {
        owner: Owner,
        res: Result<Owned, String>,
    },
    Renew {
        owner: Owner,
        lease: Duration,
        res: Result<Owned, String>,
    },
    Forget {
        res: Result<bool, String>,
    },
}

impl StoreOp {
    pub(crate) fn owner(&self) -> Option<Owner> {
        match self {
            StoreOp::Claim { owner, .. }
            | StoreOp::Complete { owner, .. }
            | StoreOp::Release { owner, .. }
            | StoreOp::Renew { owner, .. } => Some(*owner),
            StoreOp::Forget { .. } => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct StoreEv {
    /// When the operation finished.
    pub(crate) t: Duration,
    pub(crate) key: String,
    pub(crate) op: StoreOp,
}

/// The shared log and the simulated business database of one run.
#[derive(Debug)]
pub(crate) struct World {
    epoch: Instant,
    events: Mutex<Vec<(Duration, Ev)>>,
    store_log: Mutex<Vec<StoreEv>>,
    /// The business table: one row per key (the unique key is the backstop).
    rows: Mutex<HashMap<usize, u64>>,
    /// The fenced register: key -> highest fence written.
    register: Mutex<HashMap<usize, u64>>,
    /// Calls in flight per process, to mark them crashed.
    running: Mutex<HashMap<usize, Vec<usize>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl World {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(World {
            epoch: Instant::now(),
            events: Mutex::new(Vec::new()),
            store_log: Mutex::new(Vec::new()),
            rows: Mutex::new(HashMap::new()),
            register: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    pub(crate) fn now(&self) -> Duration {
        Instant::now() - self.epoch
    }

    pub(crate) fn ev(&self, e: Ev) {
        let t = self.now();
        lock(&self.events).push((t, e));
    }

    pub(crate) fn store_ev(&self, key: &str, op: StoreOp) {
        let t = self.now();
        lock(&self.store_log).push(StoreEv {
            t,
            key: key.to_owned(),
            op,
        });
    }

    pub(crate) fn call_started(&self, proc: usize, call: usize) {
        lock(&self.running).entry(proc).or_default().push(call);
        self.ev(Ev::CallStart { call });
    }

    pub(crate) fn call_ended(
        &self,
        proc: usize,
        call: usize,
        result: CallResult,
        elapsed: Duration,
    ) {
        if let Some(v) = lock(&self.running).get_mut(&proc) {
            v.retain(|c| *c != call);
        }
        self.ev(Ev::CallEnd {
            call,
            result,
            elapsed,
        });
    }

    /// Marks every call of `proc` still in flight as crashed.
    pub(crate) fn crash(&self, proc: usize) {
        let calls = lock(&self.running).remove(&proc).unwrap_or_default();
        for call in calls {
            self.ev(Ev::Crashed { call });
        }
    }

    /// Inserts the business row; false on a unique violation.
    pub(crate) fn insert(&self, key: usize, value: u64) -> bool {
        let mut rows = lock(&self.rows);
        if rows.contains_key(&key) {
            return false;
        }
        rows.insert(key, value);
        true
    }

    pub(crate) fn row(&self, key: usize) -> Option<u64> {
        lock(&self.rows).get(&key).copied()
    }

    /// `UPDATE … SET fence = $f WHERE key = $k AND fence <= $f`.
    pub(crate) fn fenced_write(&self, key: usize, fence: u64) -> bool {
        let mut reg = lock(&self.register);
        let cur = reg.entry(key).or_insert(0);
        if *cur <= fence {
            *cur = fence;
            true
        } else {
            false
        }
    }

    pub(crate) fn events(&self) -> Vec<(Duration, Ev)> {
        lock(&self.events).clone()
    }

    pub(crate) fn store_log(&self) -> Vec<StoreEv> {
        lock(&self.store_log).clone()
    }

    pub(crate) fn rows(&self) -> HashMap<usize, u64> {
        lock(&self.rows).clone()
    }
}
