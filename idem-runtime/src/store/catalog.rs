//! The constraint-catalog trait: looking up unique constraints by name in the
//! business database. It sits beside the stores (the SQL stores implement it,
//! in `sql/catalog.rs`) so that nothing under `store/` reaches up into the
//! backstop matching that uses it; `crate::backstop` re-exports both names.

use super::{BoxFuture, StoreError};

/// The definition of a unique index, as a catalog reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintDef {
    /// The table the index is on.
    pub table: String,
    /// Its columns, in index order.
    pub columns: Vec<String>,
}

/// Looks up unique constraints by name in the business database, for `verify()`
/// and for databases whose errors do not name the constraint (SQLite).
pub trait ConstraintCatalog: Send + Sync + 'static {
    /// The unique constraint or index called `name`, if it exists.
    fn unique_constraint<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ConstraintDef>, StoreError>>;
}
