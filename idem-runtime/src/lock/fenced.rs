//! The fenced SQL write: the statement that makes a lock holder whose lease
//! lapsed harmless, and its answer as a type.
//!
//! ```text
//! UPDATE t_stock SET qty = qty - $1, fence = 1733050000123456
//!  WHERE (sku = $2) AND fence <= 1733050000123456
//! ```
//!
//! The row remembers the fence of the last holder that wrote it; a write carrying
//! an older fence matches no row. The fence is inlined as an integer literal (a
//! `u64` has no quoting to get wrong), so the caller binds only the placeholders
//! of its own `SET` and condition, in their order, in any dialect. Rows must
//! exist before they are fenced (insert them with fence 0): an update that
//! matches nothing cannot tell "stale" from "missing", and reads as stale.

use crate::db::{Dialect, Ident};
use crate::error::Error;
use crate::fence::Fence;

/// A fenced `UPDATE` on one table, checked once and reused.
///
/// ```
/// use idem::{Fence, db::Dialect, lock::{FencedUpdate, FencedWrite}};
/// let upd = FencedUpdate::new(Dialect::Postgres, "t_stock", "fence").unwrap();
/// let sql = upd.sql("qty = qty - $1", "sku = $2", Fence::new(42));
/// assert_eq!(
///     sql,
///     r#"UPDATE "t_stock" SET qty = qty - $1, "fence" = 42 WHERE (sku = $2) AND "fence" <= 42"#
/// );
/// // sqlx::query(&sql).bind(1).bind("sku-1").execute(&pool).await?.rows_affected()
/// assert_eq!(FencedWrite::from_rows(0), FencedWrite::Stale);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedUpdate {
    dialect: Dialect,
    table: Ident,
    fence_column: Ident,
}

/// What a fenced write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a stale write changed nothing: the lock was lost to a later holder"]
pub enum FencedWrite {
    /// The write applied to this many rows.
    Applied {
        /// Rows updated.
        rows: u64,
    },
    /// No row accepted the write: a holder with a later fence wrote it (this
    /// holder's lease lapsed), or the condition matched no row.
    Stale,
}

impl FencedWrite {
    /// Reads a statement's affected-row count.
    pub fn from_rows(rows: u64) -> FencedWrite {
        if rows == 0 {
            FencedWrite::Stale
        } else {
            FencedWrite::Applied { rows }
        }
    }

    /// True when the write applied.
    pub fn is_applied(self) -> bool {
        matches!(self, FencedWrite::Applied { .. })
    }
}

impl FencedUpdate {
    /// Checks the table and fence column names (plain identifiers, no reserved
    /// words: `Error::Config` otherwise).
    pub fn new(dialect: Dialect, table: &str, fence_column: &str) -> Result<Self, Error> {
        let ident = |what: &str, s: &str| {
            Ident::new(s).map_err(|e| Error::Config(format!("fenced write {what} `{s}`: {e}")))
        };
        Ok(FencedUpdate {
            dialect,
            table: ident("table", table)?,
            fence_column: ident("fence column", fence_column)?,
        })
    }

    /// `UPDATE <table> SET <set>, <fence> = <f> WHERE (<condition>) AND <fence> <= <f>`.
    /// `set` and `condition` are the caller's SQL with its own placeholders
    /// (never request data spliced in).
    pub fn sql(&self, set: &str, condition: &str, fence: Fence) -> String {
        let (t, f, v) = (
            self.table.quoted(self.dialect),
            self.fence_column.quoted(self.dialect),
            fence.get(),
        );
        format!("UPDATE {t} SET {set}, {f} = {v} WHERE ({condition}) AND {f} <= {v}")
    }
}
