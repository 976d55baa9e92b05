//! The schema as a whole: every table's DDL as it is now (`ddl()`), and in
//! the steps a migration tool applies (`migrations/<dialect>/` holds them
//! for the default names).

use super::table_set::{Shape, table_sets};
use super::{Dialect, TableNames};

/// The schema idem needs (the tables of every registered
/// [`TableSet`](super::TableSet): records, fences, one-time tokens, and the
/// tables of the techniques that keep rows beside them) as it is now, for a new database: idempotent
/// `CREATE … IF NOT EXISTS` statements separated by `;\n`. Apply it with your
/// migration tool, or call `migrate()`, which also brings tables an earlier
/// version created up to date. A database set up step by step instead
/// applies each of [`migrations`] once; the two end in the same schema.
///
/// ```
/// use idem::db::Dialect;
/// use idem::store::sql::{ddl, TableNames};
/// let text = ddl(Dialect::Postgres, &TableNames::default());
/// assert!(text.contains("CREATE TABLE IF NOT EXISTS idem_records"));
/// assert!(text.contains("CREATE TABLE IF NOT EXISTS idem_tokens"));
/// assert!(text.contains("CREATE TABLE IF NOT EXISTS idem_consume_log"));
/// assert!(text.contains("CREATE TABLE IF NOT EXISTS idem_outbox"));
/// ```
pub fn ddl(dialect: Dialect, names: &TableNames) -> String {
    join(tables(dialect, names, Shape::Current))
}

/// The schema in steps, as the files of a migration tool hold them: each
/// step's name (`0001_idem_tables`, `0002_outbox_namespaces`, …) and its
/// statements, each ended by `;\n`. Each step runs once, in order, and an
/// applied step's text never changes. The crate's `migrations/<dialect>/`
/// folder holds these texts for the default names.
///
/// ```
/// use idem::db::Dialect;
/// use idem::store::sql::{migrations, TableNames};
/// let steps = migrations(Dialect::Sqlite, &TableNames::default());
/// assert_eq!(steps[0].0, "0001_idem_tables");
/// assert!(steps[1].1.contains("ADD COLUMN namespace"));
/// ```
pub fn migrations(dialect: Dialect, names: &TableNames) -> Vec<(&'static str, String)> {
    let mut steps = vec![(
        "0001_idem_tables",
        join(tables(dialect, names, Shape::First)),
    )];
    steps.extend(upgrade_steps(dialect, names).map(|(name, v)| (name, join(v))));
    steps
}

/// Every set's steps after the first, in the order of their names (each
/// step belongs to one set).
fn upgrade_steps(d: Dialect, n: &TableNames) -> impl Iterator<Item = (&'static str, Vec<String>)> {
    let mut steps: Vec<_> = table_sets().flat_map(|s| s.upgrades(d, n)).collect();
    steps.sort_by_key(|(name, _)| *name);
    steps.into_iter()
}

fn join(v: Vec<String>) -> String {
    let mut out = String::new();
    for s in v {
        out.push_str(&s);
        out.push_str(";\n");
    }
    out
}

/// What `migrate()` runs, one statement at a time: the upgrades of tables an
/// earlier version created (each taken as done when its change is there
/// already, or when its table is not: a new database), then the current
/// schema's `CREATE … IF NOT EXISTS`.
pub(crate) fn statements(d: Dialect, n: &TableNames) -> Vec<String> {
    let mut v = upgrades(d, n);
    v.extend(tables(d, n, Shape::Current));
    v
}

/// Every registered set's tables in `shape`, in schema order.
fn tables(d: Dialect, n: &TableNames, shape: Shape) -> Vec<String> {
    table_sets().flat_map(|s| s.ddl(d, n, shape)).collect()
}

/// How many of [`statements`] are upgrades (the rest must all succeed).
pub(crate) fn upgrade_count(d: Dialect, n: &TableNames) -> usize {
    upgrades(d, n).len()
}

/// The statements of the steps after the first.
fn upgrades(d: Dialect, n: &TableNames) -> Vec<String> {
    upgrade_steps(d, n).flat_map(|(_, v)| v).collect()
}

/// An upgrade statement with nothing to do: a column or key it adds exists,
/// a key it drops is gone (MySQL/MariaDB 1060, 1061, 1091; SQLite's
/// "duplicate column name"), or its table does not exist yet (PostgreSQL
/// 42P01, or 3F000 for a schema not created yet, MySQL/MariaDB 1146, SQLite
/// "no such table": a new database, which
/// the current schema's statements then create). Upgrades change one thing
/// per statement, or all of theirs at once (MySQL's one `ALTER TABLE`), so
/// "already there" means "done".
pub(crate) fn nothing_to_upgrade(e: &sqlx::Error) -> bool {
    let Some(db) = e.as_database_error() else {
        return false;
    };
    #[cfg(feature = "mysql")]
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return matches!(my.number(), 1060 | 1061 | 1091 | 1146);
    }
    matches!(db.code().as_deref(), Some("42P01" | "3F000"))
        || db.message().contains("duplicate column name")
        || db.message().contains("no such table")
}
