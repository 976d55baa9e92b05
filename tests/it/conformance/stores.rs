//! The conformance suite on every store of the store list
//! (`support::stores::for_each_store!`): SQL cases on fresh tables (a fresh
//! schema on PostgreSQL) dropped when they end, Redis under a fresh prefix.

crate::support::stores::for_each_store!(crate::conformance::suite::conformance_suite);
