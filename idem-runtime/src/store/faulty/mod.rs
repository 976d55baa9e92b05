//! `FaultyStore`: wraps any store and injects the failures idem must survive.
//!
//! It is part of the public API so users can test their own guarded functions the
//! way idem tests itself: an unavailable store, a slow or hung store, a reply lost
//! after the server applied the command, and keys lost as in a cache failover.
//! Faults are switched on by hand or drawn from a seeded [`FaultPlan`], so every
//! run can be reproduced.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod techniques;

use super::{
    BoxFuture, Claim, ClaimRequest, Owned, Owner, RecordState, Store, StoreError, Taken, Warning,
};

/// Probabilities (0.0–1.0) of each fault per store operation, with the seed that
/// makes the sequence of draws reproducible.
#[derive(Debug, Clone, Copy, Default)]
pub struct FaultPlan {
    /// Seed of the xorshift generator.
    pub seed: u64,
    /// The operation fails without reaching the store.
    pub unavailable: f64,
    /// The operation applies, then its reply is lost (the caller sees `Unavailable`).
    pub lost_reply: f64,
    /// Before a claim, the key's record is lost (as in a failover to a lagging replica).
    pub lost_key: f64,
    /// The operation is delayed by `delay`.
    pub slow: f64,
    /// The delay used by `slow`.
    pub delay: Duration,
}

#[derive(Debug, Default)]
struct State {
    rng: u64,
    plan: Option<FaultPlan>,
    seen: HashSet<String>,
    lose_replies: u64,
    delay: Option<Duration>,
    reply_delay: Option<Duration>,
}

/// Counters of what the wrapper did, for assertions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FaultCounts {
    /// Operations passed to the inner store.
    pub ops: u64,
    /// Operations refused as unavailable.
    pub unavailable: u64,
    /// Operations applied whose reply was dropped.
    pub lost_replies: u64,
    /// Keys deleted to simulate data loss.
    pub lost_keys: u64,
}

/// A store wrapper that injects faults. See the module docs.
#[derive(Debug)]
pub struct FaultyStore<S> {
    inner: S,
    down: AtomicBool,
    state: Mutex<State>,
    ops: AtomicU64,
    unavailable: AtomicU64,
    lost_replies: AtomicU64,
    lost_keys: AtomicU64,
}

#[derive(Clone, Copy)]
enum Op {
    Claim,
    Mutate,
    Read,
}

enum Draw {
    Pass,
    Refuse,
    LoseReply,
}

impl<S: Store> FaultyStore<S> {
    /// Wraps `inner` with no fault switched on.
    pub fn new(inner: S) -> Self {
        FaultyStore {
            inner,
            down: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            ops: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
            lost_replies: AtomicU64::new(0),
            lost_keys: AtomicU64::new(0),
        }
    }

    /// Wraps `inner` with faults drawn from `plan`.
    pub fn with_plan(inner: S, plan: FaultPlan) -> Self {
        let s = Self::new(inner);
        s.set_plan(Some(plan));
        s
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the random fault plan (`None` stops random faults).
    pub fn set_plan(&self, plan: Option<FaultPlan>) {
        let mut st = self.state();
        st.rng = plan.map(|p| p.seed | 1).unwrap_or(1);
        st.plan = plan;
    }

    /// Makes every operation fail as unavailable (true) or pass (false).
    pub fn set_unavailable(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Delays every operation (a slow store; a long delay is a hung store).
    pub fn set_delay(&self, delay: Option<Duration>) {
        self.state().delay = delay;
    }

    /// Delays every reply *after* the inner store applied the operation, so a
    /// caller cancelled meanwhile leaves an applied command behind.
    pub fn set_reply_delay(&self, delay: Option<Duration>) {
        self.state().reply_delay = delay;
    }

    /// The next `n` mutating operations apply, then lose their reply.
    pub fn lose_next_replies(&self, n: u64) {
        self.state().lose_replies = n;
    }

    /// Deletes every key this wrapper has seen, as a failover to an empty replica would.
    pub async fn lose_all_keys(&self) -> Result<u64, StoreError> {
        let keys: Vec<String> = self.state().seen.iter().cloned().collect();
        let mut n = 0;
        for k in keys {
            if self.inner.forget(&k).await? {
                n += 1;
            }
        }
        self.lost_keys.fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }

    /// What the wrapper did so far.
    pub fn counts(&self) -> FaultCounts {
        FaultCounts {
            ops: self.ops.load(Ordering::Relaxed),
            unavailable: self.unavailable.load(Ordering::Relaxed),
            lost_replies: self.lost_replies.load(Ordering::Relaxed),
            lost_keys: self.lost_keys.load(Ordering::Relaxed),
        }
    }

    fn next_f64(st: &mut State) -> f64 {
        // xorshift64*: tiny, seedable, good enough to pick faults.
        let mut x = st.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        st.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Decides this operation's fate; returns the delay and whether to drop the key first.
    fn draw(&self, op: Op, key: Option<&str>) -> (Draw, Option<Duration>, bool, Option<Duration>) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        let mut st = self.state();
        if let Some(k) = key
            && !st.seen.contains(k)
        {
            st.seen.insert(k.to_owned());
        }
        let mut delay = st.delay;
        let reply_delay = st.reply_delay;
        if self.down.load(Ordering::SeqCst) {
            return (Draw::Refuse, delay, false, None);
        }
        if matches!(op, Op::Claim | Op::Mutate) && st.lose_replies > 0 {
            st.lose_replies -= 1;
            return (Draw::LoseReply, delay, false, reply_delay);
        }
        let Some(plan) = st.plan else {
            return (Draw::Pass, delay, false, reply_delay);
        };
        let mut lose_key = false;
        if matches!(op, Op::Claim) && plan.lost_key > 0.0 && Self::next_f64(&mut st) < plan.lost_key
        {
            lose_key = true;
        }
        if plan.slow > 0.0 && Self::next_f64(&mut st) < plan.slow {
            delay = Some(plan.delay);
        }
        let r = Self::next_f64(&mut st);
        let draw = if r < plan.unavailable {
            Draw::Refuse
        } else if !matches!(op, Op::Read) && r < plan.unavailable + plan.lost_reply {
            Draw::LoseReply
        } else {
            Draw::Pass
        };
        (draw, delay, lose_key, reply_delay)
    }

    /// `f` starts the inner operation only when the fault plan lets it through:
    /// some stores (the memory store) apply a command when the call is made, not
    /// when its future is polled.
    async fn run<'a, T>(
        &'a self,
        op: Op,
        key: Option<&'a str>,
        f: impl FnOnce() -> BoxFuture<'a, Result<T, StoreError>> + Send + 'a,
    ) -> Result<T, StoreError> {
        let (draw, delay, lose_key, reply_delay) = self.draw(op, key);
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        if lose_key
            && let Some(k) = key
            && self.inner.forget(k).await?
        {
            self.lost_keys.fetch_add(1, Ordering::Relaxed);
        }
        match draw {
            Draw::Refuse => {
                self.unavailable.fetch_add(1, Ordering::Relaxed);
                Err(StoreError::Unavailable("injected fault: store down".into()))
            }
            Draw::LoseReply => {
                let _ = f().await;
                if let Some(d) = reply_delay {
                    tokio::time::sleep(d).await;
                }
                self.lost_replies.fetch_add(1, Ordering::Relaxed);
                Err(StoreError::Unavailable("injected fault: reply lost".into()))
            }
            Draw::Pass => {
                let r = f().await;
                if let Some(d) = reply_delay {
                    tokio::time::sleep(d).await;
                }
                r
            }
        }
    }
}

impl<S: Store> Store for FaultyStore<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn claim<'a>(&'a self, req: ClaimRequest<'a>) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(self.run(Op::Claim, Some(req.key), move || self.inner.claim(req)))
    }

    fn claim_unfenced<'a>(
        &'a self,
        req: ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(self.run(Op::Claim, Some(req.key), move || {
            self.inner.claim_unfenced(req)
        }))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || {
            self.inner.complete(key, owner, payload, ttl)
        }))
    }

    fn complete_taken<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        taken: Taken,
        payload: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || {
            self.inner.complete_taken(key, owner, taken, payload, ttl)
        }))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || {
            self.inner.release(key, owner)
        }))
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        owner: Owner,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Owned, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || {
            self.inner.renew(key, owner, lease)
        }))
    }

    fn inspect<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecordState>, StoreError>> {
        Box::pin(self.run(Op::Read, Some(key), move || self.inner.inspect(key)))
    }

    fn forget<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || self.inner.forget(key)))
    }

    fn purge_expired(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.run(Op::Mutate, None, move || self.inner.purge_expired()))
    }

    fn verify(&self) -> BoxFuture<'_, Result<Vec<Warning>, StoreError>> {
        Box::pin(self.run(Op::Read, None, move || self.inner.verify()))
    }

    fn census<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<super::Census, StoreError>> {
        Box::pin(self.run(Op::Read, None, move || self.inner.census(namespace)))
    }

    fn purge_report(&self, dry_run: bool) -> BoxFuture<'_, Result<super::PurgeReport, StoreError>> {
        Box::pin(self.run(Op::Mutate, None, move || self.inner.purge_report(dry_run)))
    }

    fn list<'a>(
        &'a self,
        ns: &'a str,
        filter: super::ListFilter<'a>,
    ) -> BoxFuture<'a, Result<Vec<(String, super::Counted)>, StoreError>> {
        Box::pin(self.run(Op::Read, None, move || self.inner.list(ns, filter)))
    }

    fn forget_if<'a>(
        &'a self,
        key: &'a str,
        seen: &'a RecordState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.run(Op::Mutate, Some(key), move || {
            self.inner.forget_if(key, seen)
        }))
    }

    /// The inner store's tokens, under the same faults as its records (see
    /// `techniques`).
    fn tokens(&self) -> Option<&dyn super::token::TokenStore> {
        self.inner
            .tokens()
            .map(|_| self as &dyn super::token::TokenStore)
    }

    /// The inner store's state check-and-set, under the same faults.
    fn states(&self) -> Option<&dyn super::state::StateStore> {
        self.inner
            .states()
            .map(|_| self as &dyn super::state::StateStore)
    }

    /// The inner store's queue: its connections are the ones in use.
    fn send_queue(&self) -> Option<&super::SendQueue> {
        self.inner.send_queue()
    }

    fn take_unreplicated(&self) -> u64 {
        self.inner.take_unreplicated()
    }
}
