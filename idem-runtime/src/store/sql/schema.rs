//! The schema as a whole: every table's DDL, in the steps a migration tool
//! applies (`migrations/<dialect>/` holds them for the default names).

use super::ddl::records_statements;
use super::{Dialect, TableNames};

/// The schema idem needs (records, fences, one-time tokens, the consume log,
/// the transactional outbox): each step of [`migrations`] in order, its
/// statements separated by `;\n`. Apply it with your migration tool, or call
/// `migrate()`. The first step is `CREATE … IF NOT EXISTS` statements; a
/// later step changes tables the earlier ones created (PostgreSQL's are
/// idempotent, MySQL/MariaDB's and SQLite's run once, as migration tools run
/// them; `migrate()` takes "already there" as done on every dialect).
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
    migrations(dialect, names)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// The schema in steps, as the files of a migration tool hold it: each
/// step's name (`0001_idem_tables`, `0002_outbox_namespaces`, …) and its
/// statements, each ended by `;\n`. The crate's `migrations/<dialect>/`
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
    let join = |v: Vec<String>| {
        let mut out = String::new();
        for s in v {
            out.push_str(&s);
            out.push_str(";\n");
        }
        out
    };
    vec![
        ("0001_idem_tables", join(first_statements(dialect, names))),
        (
            "0002_outbox_namespaces",
            join(super::outbox_ddl::upgrade_statements(dialect, names)),
        ),
    ]
}

/// The DDL as separate statements (drivers run one statement at a time),
/// every step in order.
pub(crate) fn statements(d: Dialect, n: &TableNames) -> Vec<String> {
    let mut v = first_statements(d, n);
    v.extend(super::outbox_ddl::upgrade_statements(d, n));
    v
}

/// The first step: the records' and fences' tables here, then the one-time
/// tokens' (`token_sql.rs`), the consume log's (`consume_sql.rs`) and the
/// outbox's (`outbox_ddl.rs`).
fn first_statements(d: Dialect, n: &TableNames) -> Vec<String> {
    let mut v = records_statements(d, n);
    v.extend(super::token_sql::statements(d, n));
    v.extend(super::consume_sql::statements(d, n));
    v.extend(super::outbox_ddl::first_statements(d, n));
    v
}

/// An upgrade step that finds its change made already: a column or key it
/// adds exists, a key it drops is gone (MySQL/MariaDB 1060, 1061, 1091;
/// SQLite's "duplicate column name"). Such steps change one thing per
/// statement, or all of theirs at once (MySQL's one `ALTER TABLE`), so
/// "already there" means "done".
pub(crate) fn applied_already(e: &sqlx::Error) -> bool {
    let Some(db) = e.as_database_error() else {
        return false;
    };
    #[cfg(feature = "mysql")]
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return matches!(my.number(), 1060 | 1061 | 1091);
    }
    db.message().contains("duplicate column name")
}
