//! The metric names and labels (DESIGN §6) and the defaults without a recorder.

pub mod defaults;
pub mod metrics;
