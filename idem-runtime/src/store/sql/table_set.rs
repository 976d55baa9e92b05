//! [`TableSet`]: the contract between a SQL store and the tables that live
//! beside its records, and the registry of the sets.

use super::stmt::Stmt;
use super::{Dialect, TableNames};

/// Which shape of a table set's DDL is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shape {
    /// As the first migration step created it (kept as it was: migration
    /// tools check that an applied step's text never changes).
    First,
    /// As it is now: what [`ddl`](super::ddl) creates in a new database.
    Current,
}

/// One table of a set whose name [`TableNames`] holds.
#[derive(Debug, Clone, Copy)]
pub struct TableSpec {
    /// The key the name is stored and overridden under ([`TableNames::table`]).
    pub key: &'static str,
    /// The name's end: `idem_<suffix>` by default, `<records>_<suffix>` under
    /// [`TableNames::new`]. The records table itself has the suffix `records`
    /// and is named after the argument of `new`.
    pub suffix: &'static str,
    /// Checks a name for this table (a plain identifier, short enough for the
    /// index names derived from it).
    pub check: fn(&str) -> Result<(), String>,
}

/// A group of tables kept in the store's database, with everything the store
/// needs to create, upgrade, purge, count and probe them.
///
/// Each set (the records and their fences, the one-time tokens, and the
/// tables of the techniques that keep rows in the caller's database) says
/// what its tables are called, how each dialect creates them, which migration
/// steps change them, how their expired rows are counted and purged, and how
/// `verify()` probes them. idem's sets register themselves; the store,
/// [`ddl`](super::ddl), [`migrations`](super::migrations), the purge, its
/// dry-run counts and `verify()` walk the registry ([`table_sets`]) and name
/// none of them.
///
/// ```
/// use idem::store::sql::table_sets;
/// let names: Vec<&str> = table_sets().map(|s| s.name()).collect();
/// assert_eq!(&names[..2], ["records", "tokens"]);
/// ```
pub trait TableSet: Send + Sync + 'static {
    /// The set's name: its row in a [`PurgeReport`](crate::store::PurgeReport).
    fn name(&self) -> &'static str;
    /// The tables whose names [`TableNames`] holds.
    fn tables(&self) -> &'static [TableSpec];
    /// The statements that create the set's objects in `shape`, each
    /// idempotent (`CREATE … IF NOT EXISTS`).
    fn ddl(&self, dialect: Dialect, names: &TableNames, shape: Shape) -> Vec<String>;
    /// The migration steps after the first (`(step name, statements)`), which
    /// bring tables in the [`Shape::First`] shape to the current one. A step
    /// whose change is there already, or whose table is not, is done.
    fn upgrades(&self, dialect: Dialect, names: &TableNames) -> Vec<(&'static str, Vec<String>)> {
        let _ = (dialect, names);
        Vec::new()
    }
    /// Deletes a batch of expired rows (one statement, at most `PURGE_BATCH` rows), if
    /// the set has any to purge.
    fn purge(&self, dialect: Dialect, names: &TableNames) -> Option<String>;
    /// Counts what [`purge`](Self::purge) would delete (one `COUNT(*)`).
    fn expired(&self, dialect: Dialect, names: &TableNames) -> Option<String>;
    /// `verify()`'s probes: (object name, a statement reading it that
    /// returns no row).
    fn probes(&self, dialect: Dialect, names: &TableNames) -> Vec<(String, String)>;
    /// Two rows for the conformance suite, as `INSERT` statements: the first
    /// past its retention (a purge deletes it), the second live (a purge
    /// keeps it). Not part of the API.
    #[doc(hidden)]
    fn samples(&self, dialect: Dialect, names: &TableNames) -> [String; 2];
}

/// A registered table set, and where it comes in the schema (lower first).
pub(crate) struct Registered {
    pub(crate) order: u16,
    pub(crate) set: &'static dyn TableSet,
}

impl Registered {
    /// A set at `order` (records 0, tokens 10, then the techniques).
    pub(crate) const fn new(order: u16, set: &'static dyn TableSet) -> Self {
        Registered { order, set }
    }
}

inventory::collect!(Registered);

/// Every registered table set, in schema order: the records and the
/// one-time tokens first, then the tables of each technique.
pub fn table_sets() -> impl Iterator<Item = &'static dyn TableSet> {
    let mut all: Vec<&Registered> = inventory::iter::<Registered>.into_iter().collect();
    all.sort_by_key(|r| (r.order, r.set.name()));
    all.into_iter().map(|r| r.set)
}

/// Every table the registered sets name.
pub(crate) fn table_specs() -> impl Iterator<Item = &'static TableSpec> {
    table_sets().flat_map(|s| s.tables().iter())
}

/// The database clock as a value comparable with `expires_at`.
pub(crate) fn db_now(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "statement_timestamp()",
        Dialect::MySql => super::mysql_sql::MYSQL_NOW,
        Dialect::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
    }
}

/// A condition no row meets, for probes.
pub(crate) fn never(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "FALSE",
        Dialect::MySql => "1 = 0",
        Dialect::Sqlite => "0",
    }
}

/// `COUNT(*)` of the rows of `table` past `expires_at` that also meet `extra`
/// (empty, or a condition followed by `AND `).
pub(crate) fn count_expired(d: Dialect, table: &str, extra: &str) -> String {
    let now = db_now(d);
    format!("SELECT COUNT(*) FROM {table} WHERE {extra}expires_at <= {now}")
}

/// An `expires_at` value `secs` seconds from the database clock (negative:
/// in the past), for [`TableSet::samples`].
pub(crate) fn at(d: Dialect, secs: i64) -> String {
    match d {
        Dialect::Postgres => format!("statement_timestamp() + INTERVAL '{secs} seconds'"),
        Dialect::MySql => format!("UTC_TIMESTAMP(6) + INTERVAL {secs} SECOND"),
        Dialect::Sqlite => {
            format!("CAST(unixepoch('subsec') * 1000000 AS INTEGER) + {secs} * 1000000")
        }
    }
}

/// A set's statements as a store runs them, prepared once per store.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) name: &'static str,
    pub(crate) purge: Option<Stmt>,
    pub(crate) expired: Option<Stmt>,
    pub(crate) probes: Vec<(String, Stmt)>,
}

/// Every registered set's statements for `d` and `n`, in schema order.
pub(crate) fn prepare(d: Dialect, n: &TableNames) -> Vec<Prepared> {
    table_sets()
        .map(|s| Prepared {
            name: s.name(),
            purge: s.purge(d, n).map(Stmt::from),
            expired: s.expired(d, n).map(Stmt::from),
            probes: s
                .probes(d, n)
                .into_iter()
                .map(|(name, q)| (name, Stmt::from(q)))
                .collect(),
        })
        .collect()
}
