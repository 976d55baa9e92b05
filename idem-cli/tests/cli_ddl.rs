//! `idem ddl` prints `idem::sql::ddl()` byte for byte, and the checked-in
//! migration files are `idem::sql::migrations()`, one file per step (that
//! both end in the same schema is `cli_sql`'s test: it builds its databases
//! from the files and verifies them).

mod support;

use idem::db::Dialect;

use idem::store::sql::{TableNames, ddl, migrations};
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
        let steps = migrations(dialect, &TableNames::default());
        let dir = format!("{}/../migrations/{arg}", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        let names: Vec<String> = steps.iter().map(|(n, _)| format!("{n}.sql")).collect();
        assert_eq!(files, names, "{dir} holds one file per step");
        for (name, text) in &steps {
            let path = format!("{dir}/{name}.sql");
            let file = std::fs::read_to_string(&path).unwrap();
            assert_eq!(&file, text, "{path} is stale");
        }

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
