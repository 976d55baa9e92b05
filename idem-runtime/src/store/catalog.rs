//! The constraint-catalog trait: looking up unique constraints by name in the
//! business database. It sits beside the stores (the SQL stores implement it)
//! so that nothing under `store/` reaches up into the
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

    /// The names of every unique constraint and index the catalog can see,
    /// for the "did you mean" of `verify()` when a declared one is missing.
    /// The default lists none.
    fn unique_names(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The database engine behind the catalog, so `verify()` can check that the
    /// handle's violation detection sees that engine's errors. `None` (the
    /// default) checks every engine's form and is satisfied by any.
    fn engine(&self) -> Option<Engine> {
        None
    }
}

/// A database engine, as far as its unique-violation errors differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Engine {
    /// PostgreSQL: SQLSTATE `23505`, the constraint named in the error.
    Postgres,
    /// MySQL and MariaDB: error 1062, the index named in the message.
    MySql,
    /// SQLite: `UNIQUE constraint failed: t.c`, columns only.
    Sqlite,
}
