//! The transactional outbox: enqueue, relays, brokers, crashes, faults, throughput.

pub mod brokers;
pub mod crash;
pub mod e2e;
pub mod enqueue;
pub mod faults;
pub mod lag;
pub mod namespaces;
pub mod ordering;
pub mod relays;
pub mod support;
pub mod throughput;
pub mod verdicts;
