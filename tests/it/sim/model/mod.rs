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

mod store;
mod wakeup;
