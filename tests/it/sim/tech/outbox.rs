//! The transactional outbox's relay (`idem::outbox::Relay`) over a real
//! SQLite caller database, publishing to a model broker.
//!
//! Producers run business transactions that enqueue with
//! `OutboxTable::enqueue` (some rolled back, some retried after they
//! committed, some in a second namespace, some ordered per business id, some
//! on a topic no stream captures or with a payload over the broker's size
//! limit). One to three relays run at once; a relay may crash in the middle
//! of a batch (its `run` future aborted inside the broker's publish, after
//! the broker stored part of the batch) and be started again. The model
//! broker (`outbox_broker.rs`) implements the public `Publisher` trait: it
//! keeps the log of what it stored, in order, refuses messages (no stream
//! for the topic, over the size limit, a seeded nack), can be down for a
//! while (refusing connections, or silent until the relay's publish timeout)
//! and can lose a confirmation of a message it stored. Its log, in order,
//! then goes through the real `consume_once` (the consumer's side).
//!
//! The database can be seen two ways. `Serial` is SQLite as it is: writers
//! take turns, so a message's `seq` follows commit order. `Mvcc` models a
//! database with concurrent writers (PostgreSQL, MariaDB): a transaction
//! draws its messages' `seq` when it enqueues and they become visible when it
//! commits, so an earlier-enqueued message can commit after a later one.
//! There, as `OutboxTable::enqueue` promises on those databases, an ordered
//! enqueue waits while another open transaction holds an ordered enqueue of
//! the same business id (`outbox_produce::ORDERED_ENQUEUES_WAIT`). Both run
//! the real enqueue and the real relay on the real table; `Mvcc` only
//! renumbers the inserted row, in its own transaction, to the `seq` the
//! sequence gave it at enqueue time (`outbox_produce.rs`).
//!
//! The relay runs in real time (leases are judged by the database clock),
//! with leases under a second; a seed takes from a fraction of a second to a
//! few seconds. A seed names its schedule and the broker's choices (they
//! hash the seed and the message, not the interleaving), but how the relays'
//! timers interleave is the machine's: a rerun can differ in detail, and the
//! time-bound invariant allows for how late the machine ran its timers.
//! Invariants (`outbox_check.rs`), on the recorded history:
//!
//! | invariant | statement |
//! |---|---|
//! | `outbox-no-loss` | every message a committed enqueue returned is in the table and ends sent (and stored by the broker) or parked |
//! | `outbox-no-phantom` | no message of a rolled-back transaction is in the table or reaches the broker |
//! | `outbox-one-effect` | the broker holds at most one message id per (namespace, topic, business id), with the payload enqueued; through the real consume log (`outbox_consume.rs`), each sent fact has exactly one effect, and none has two |
//! | `outbox-order` | per ordered business id: `seq` order is commit order, and the broker's first stores follow it (parked messages aside) |
//! | `outbox-refused-never-blocks` | a refused message never keeps another from being sent; it ends parked after `max_attempts` refusals, and only then |
//! | `outbox-park-once` | `on_park` is called exactly once per parked message |
//! | `outbox-stranded` | a message held by a relay that died is published again within one lease (plus slack for outages and a loaded machine) |
//! | `outbox-enqueue` | no enqueue fails |
//!
//! Knobs: `IDEM_SIM_OUTBOX_SEEDS=N` (default 32: a CI-sized run),
//! `IDEM_SIM_OUTBOX_BASE=B`, `IDEM_SIM_OUTBOX_SEED=S` (one seed, its history
//! printed).

use std::collections::HashSet;

use super::SeedRun;
use super::outbox_broker::BrokerSpec;
use crate::sim::rng::Rng;

/// The topics: the last one is captured by no stream (a typo of a real one).
pub(crate) const TOPICS: [&str; 4] = [
    "order.created",
    "order.paid",
    "order.shipped",
    "order.refundd",
];
/// The topic no stream captures.
pub(crate) const UNCAPTURED: usize = 3;
/// The namespaces two services sharing the table enqueue under.
pub(crate) const NAMESPACES: [&str; 2] = ["", "billing"];
/// The broker's message size limit, and the size of a payload over it.
pub(crate) const SIZE_LIMIT: usize = 256;
const BIG: usize = 300;

/// How the database shows concurrent transactions (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visibility {
    Serial,
    Mvcc,
}

/// One `enqueue` of a business transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Enq {
    pub(crate) topic: usize,
    pub(crate) biz: usize,
    pub(crate) ordered: bool,
    /// A payload over the broker's size limit.
    pub(crate) big: bool,
}

impl Enq {
    pub(crate) fn business_id(&self) -> String {
        format!("o{}", self.biz)
    }

    /// A function of (topic, business id) only: the same fact enqueued again
    /// (a retried transaction, another namespace) carries the same payload.
    pub(crate) fn payload(&self) -> Vec<u8> {
        let mut p = format!("{}|o{}|", TOPICS[self.topic], self.biz).into_bytes();
        if self.big {
            p.resize(BIG, b'.');
        }
        p
    }
}

/// A business transaction: it begins at `at_ms`, enqueues, and ends
/// `dur_ms` later (committed or rolled back).
#[derive(Debug, Clone)]
pub(crate) struct Txn {
    pub(crate) at_ms: u64,
    pub(crate) dur_ms: u64,
    pub(crate) ns: usize,
    pub(crate) enq: Vec<Enq>,
    pub(crate) commit: bool,
    /// The earlier transaction this one repeats (a retry after a lost reply).
    pub(crate) retry_of: Option<usize>,
}

/// A relay's crash: inside its `call`-th publish (counting from 1), after
/// the broker stored the first `stored` messages of that batch; started
/// again (a new process) `restart_ms` later, or never.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Crash {
    pub(crate) call: u32,
    pub(crate) stored: usize,
    pub(crate) restart_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub(crate) struct RelaySpec {
    pub(crate) start_ms: u64,
    pub(crate) crash: Option<Crash>,
}

/// The relays' options (shared by every relay of a run).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Knobs {
    pub(crate) batch: usize,
    /// Batches a relay publishes at once.
    pub(crate) in_flight: usize,
    pub(crate) lease_ms: u64,
    pub(crate) idle_ms: u64,
    pub(crate) retry_min_ms: u64,
    pub(crate) retry_max_ms: u64,
    pub(crate) max_attempts: u32,
}

impl Knobs {
    pub(crate) fn publish_timeout_ms(&self) -> u64 {
        self.lease_ms / 3
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ObxSchedule {
    pub(crate) seed: u64,
    pub(crate) vis: Visibility,
    pub(crate) knobs: Knobs,
    pub(crate) relays: Vec<RelaySpec>,
    pub(crate) txs: Vec<Txn>,
    pub(crate) broker: BrokerSpec,
}

impl ObxSchedule {
    pub(crate) fn generate(seed: u64) -> ObxSchedule {
        let mut r = Rng::new(seed);
        let vis = if r.chance(70) {
            Visibility::Mvcc
        } else {
            Visibility::Serial
        };
        let batch = r.range(1, 4) as usize;
        let knobs = Knobs {
            batch,
            in_flight: r.range(1, 3) as usize,
            lease_ms: r.range(600, 1000),
            idle_ms: r.range(5, 20),
            retry_min_ms: r.range(5, 15),
            retry_max_ms: r.range(30, 60),
            max_attempts: r.range(2, 4) as u32,
        };
        let n_relays = r.range(1, 3) as usize;
        let mut relays: Vec<RelaySpec> = (0..n_relays)
            .map(|_| RelaySpec {
                start_ms: if r.chance(50) { 0 } else { r.range(0, 100) },
                crash: r.chance(35).then(|| Crash {
                    call: r.range(1, 3) as u32,
                    stored: r.range(0, batch as u64) as usize,
                    restart_ms: (n_relays == 1 || r.chance(50)).then(|| r.range(0, 200)),
                }),
            })
            .collect();
        // Someone must be left to relay: the last relay to crash comes back.
        if relays
            .iter()
            .all(|x| x.crash.is_some_and(|c| c.restart_ms.is_none()))
            && let Some(c) = relays[n_relays - 1].crash.as_mut()
        {
            c.restart_ms = Some(r.range(0, 200));
        }
        let txs = gen_txs(&mut r);
        let broker = BrokerSpec::generate(&mut r);
        ObxSchedule {
            seed,
            vis,
            knobs,
            relays,
            txs,
            broker,
        }
    }

    /// When the run gives up waiting for the table to drain.
    pub(crate) fn deadline_ms(&self) -> u64 {
        let last_tx = self.txs.iter().map(|t| t.at_ms + t.dur_ms).max();
        let last_down = self.broker.downs.iter().map(|d| d.to_ms).max();
        let last = last_tx.unwrap_or(0).max(last_down.unwrap_or(0));
        last + 2 * self.knobs.lease_ms + 2500
    }
}

/// The business transactions: a few, overlapping, on a few business ids.
fn gen_txs(r: &mut Rng) -> Vec<Txn> {
    let n_biz = r.range(1, 3) as usize;
    let ordered: Vec<bool> = (0..n_biz).map(|_| r.chance(60)).collect();
    let two_ns = r.chance(30);
    let uncaptured_pct = if r.chance(35) { 25 } else { 0 };
    // Over the size limit: a property of (topic, business id), as the payload.
    let big: Vec<Vec<bool>> = (0..TOPICS.len())
        .map(|_| (0..n_biz).map(|_| r.chance(4)).collect())
        .collect();
    let mut used: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut txs: Vec<Txn> = Vec::new();
    for _ in 0..r.range(3, 10) {
        if !txs.is_empty() && r.chance(10) {
            let j = r.range(0, txs.len() as u64 - 1) as usize;
            let first = txs[j].clone();
            txs.push(Txn {
                at_ms: first.at_ms + first.dur_ms + r.range(1, 50),
                dur_ms: r.range(0, 40),
                commit: true,
                retry_of: Some(j),
                ..first
            });
            continue;
        }
        let ns = if two_ns { r.range(0, 1) as usize } else { 0 };
        let biz = r.range(0, n_biz as u64 - 1) as usize;
        let mut enq = Vec::new();
        for _ in 0..r.range(1, 2) {
            let topic = if r.chance(uncaptured_pct) {
                UNCAPTURED
            } else {
                r.range(0, UNCAPTURED as u64 - 1) as usize
            };
            if !used.insert((ns, topic, biz)) {
                continue;
            }
            enq.push(Enq {
                topic,
                biz,
                ordered: ordered[biz],
                big: big[topic][biz],
            });
        }
        if enq.is_empty() {
            continue;
        }
        let commit = !r.chance(15);
        if !commit && r.chance(50) {
            // A rolled-back fact may be enqueued again by a later transaction.
            for e in &enq {
                used.remove(&(ns, e.topic, e.biz));
            }
        }
        txs.push(Txn {
            at_ms: r.range(0, 250),
            dur_ms: r.range(0, 120),
            ns,
            enq,
            commit,
            retry_of: None,
        });
    }
    txs
}

fn seed_run(seed: u64, verbose: bool) -> SeedRun {
    let s = ObxSchedule::generate(seed);
    let out = super::outbox_run::run(&s);
    let verdict = super::outbox_check::check(&s, &out);
    let dump = (verbose || verdict.is_err()).then(|| super::outbox_dump::dump(&s, &out));
    SeedRun {
        verdict,
        dump,
        outcomes: super::outbox_dump::outcomes(&s, &out),
    }
}

#[test]
fn sim_outbox_relay_seeded_schedules() {
    super::sweep_sized(
        "outbox",
        32,
        200,
        seed_run,
        &[
            "mvcc",
            "serial",
            "crash",
            "restart",
            "parked",
            "refused",
            "duplicate-stored",
            "consumer-duplicate",
            "down-silent",
            "down-refusing",
            "lost-confirmation",
            "ordered-overlap",
            "retried-tx",
            "rolled-back",
        ],
    );
}
