//! `#[idempotent]` end to end: expansion behaviour, backstops, fences, reports.

pub mod backstop;
pub mod basic;
pub mod concurrency;
pub mod fence;
pub mod report;
pub mod support;
