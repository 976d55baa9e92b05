//! The conformance suite on the in-process store.

use std::sync::Arc;

use crate::conformance::suite::conformance_suite;

conformance_suite!(Arc::new(idem::MemoryStore::new()), keys = 1000);
