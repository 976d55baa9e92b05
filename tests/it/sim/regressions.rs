//! Regression seeds.
