//! One slot per type for state the techniques keep per handle: the builder
//! and the handle carry it without knowing its type (the technique that
//! fills a slot is the one that reads it).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Values keyed by their type, at most one of each.
#[derive(Clone, Default)]
pub(crate) struct Extensions(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Extensions {
    /// Puts `value` in its type's slot, replacing what was there.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value in `T`'s slot, if one was put there.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("slots", &self.0.len())
            .finish()
    }
}
