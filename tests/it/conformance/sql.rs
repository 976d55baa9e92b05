//! The shared conformance suite (DESIGN §3) on the three SQL stores, each test
//! on fresh tables (a fresh schema on PostgreSQL) dropped when it ends.

mod postgres {
    use crate::conformance::suite::conformance_suite;
    use crate::support::sql::{conformance_store, many_keys};
    use idem::store::sql::Dialect;

    conformance_suite!(
        conformance_store(Dialect::Postgres).await,
        keys = many_keys(Dialect::Postgres)
    );
}

mod mariadb {
    use crate::conformance::suite::conformance_suite;
    use crate::support::sql::{conformance_store, many_keys};
    use idem::store::sql::Dialect;

    conformance_suite!(
        conformance_store(Dialect::MySql).await,
        keys = many_keys(Dialect::MySql)
    );
}

mod sqlite {
    use crate::conformance::suite::conformance_suite;
    use crate::support::sql::{conformance_store, many_keys};
    use idem::store::sql::Dialect;

    conformance_suite!(
        conformance_store(Dialect::Sqlite).await,
        keys = many_keys(Dialect::Sqlite)
    );
}
