//! `idem ddl` prints `idem::sql::ddl()` byte for byte, and the checked-in
//! migrations are that text: regenerate them with
//! `idem ddl --dialect D > migrations/D/0001_idem_tables.sql`.

mod support;

use idem::db::Dialect;

use idem::store::sql::{TableNames, ddl};
use support::idem;

#[test]
fn ddl_equals_the_library_and_the_migration_files() {
    for (arg, dialect) in [
        ("postgres", Dialect::Postgres),
        ("mysql", Dialect::MySql),
        ("sqlite", Dialect::Sqlite),
    ] {
        let printed = idem(&["ddl", "--dialect", arg]);
        assert_eq!(printed.code, 0, "{}", printed.err);
        let library = ddl(dialect, &TableNames::default());
        assert_eq!(printed.out, library, "{arg}: the command prints ddl()");
        let path = format!(
            "{}/../migrations/{arg}/0001_idem_tables.sql",
            env!("CARGO_MANIFEST_DIR")
        );
        let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            file, library,
            "{path} is stale: regenerate it with `idem ddl --dialect {arg}`"
        );
        let json = idem(&["ddl", "--dialect", arg, "--json"]).json();
        assert_eq!(json["ddl"].as_str(), Some(library.as_str()));
    }
    let schema = idem(&["ddl", "--dialect", "postgres", "--schema", "ops"]);
    assert!(
        schema
            .out
            .contains("CREATE TABLE IF NOT EXISTS ops.idem_records"),
        "{}",
        schema.out
    );
    let bad = idem(&["ddl", "--dialect", "oracle"]);
    assert_eq!(bad.code, 2);
}
