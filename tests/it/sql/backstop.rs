//! Backstop detection on real tables: the unique violation of a business insert
//! is found through `find_unique_violation` however the error is wrapped, on
//! PostgreSQL, MariaDB and SQLite; the constraint catalogs name real indexes;
//! and the guard turns a violation into a replay through `on_conflict`.

use std::sync::Arc;

use idem::backstop::{ConstraintCatalog, UniqueViolation, find_unique_violation};
use idem::db::Dialect;
use idem::{Error, FaultyStore, Hooks, How, Idem, MemoryStore};

use crate::support::sql::{Biz, BizPool, Fixture};

#[derive(Debug, thiserror::Error)]
#[error("repository failed")]
struct RepoError {
    #[source]
    inner: sqlx::Error,
}

#[derive(Debug, thiserror::Error)]
#[error("service failed")]
struct ServiceError {
    #[source]
    inner: RepoError,
}

#[derive(Debug, thiserror::Error)]
#[error("driver failed")]
struct DriverWrap<D: std::error::Error + 'static> {
    #[source]
    inner: D,
}

/// A second insert of one order number: the database's own error.
async fn duplicate(biz: &Biz, order_no: &str) -> sqlx::Error {
    biz.insert(order_no).await.expect("first insert");
    biz.insert(order_no)
        .await
        .expect_err("second insert must violate the unique index")
}

fn assert_names(v: Option<UniqueViolation>, biz: &Biz, d: Dialect) {
    let v = v.expect("a unique violation must be found");
    match d {
        // SQLite names table and columns only; the catalog maps them (below).
        Dialect::Sqlite => {
            assert_eq!(v.constraint, None);
            assert_eq!(v.table.as_deref(), Some("orders"));
            assert_eq!(v.columns, ["order_no"]);
        }
        _ => assert_eq!(v.constraint.as_deref(), Some(biz.index.as_str()), "{v:?}"),
    }
}

crate::support::sql::per_database!(
    violation_found_however_wrapped,
    catalog_finds_unique_indexes,
    guard_backstop_replays_through_catalog,
    verify_reports_missing_backstop,
);

async fn violation_found_however_wrapped(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;

    // The bare sqlx::Error.
    let e = duplicate(&biz, "o-1").await;
    assert_names(find_unique_violation(&e), &biz, d);

    // Two levels deep behind `#[source]`.
    let wrapped = ServiceError {
        inner: RepoError {
            inner: duplicate(&biz, "o-2").await,
        },
    };
    assert_names(find_unique_violation(&wrapped), &biz, d);

    // Inside anyhow, with context, as the guard's probe sees it.
    let any = anyhow::Error::from(duplicate(&biz, "o-3").await).context("creating the order");
    let view = {
        #[allow(unused_imports)]
        use idem::__private::{ErrProbe, ViaAsRef, ViaNothing, ViaStdError};
        // Exactly what the macro expansion writes (autoref specialisation).
        #[allow(clippy::needless_borrow)]
        (&&&ErrProbe(&any))
            .idem_dyn()
            .expect("anyhow errors are searchable")
    };
    assert_names(find_unique_violation(view), &biz, d);

    // The driver's own error type, outside sqlx::Error.
    let db = duplicate(&biz, "o-4")
        .await
        .into_database_error()
        .expect("a database error");
    let v = match d {
        Dialect::Postgres => {
            let pg = db.downcast::<sqlx::postgres::PgDatabaseError>();
            find_unique_violation(&DriverWrap { inner: *pg })
        }
        Dialect::MySql => {
            let my = db.downcast::<sqlx::mysql::MySqlDatabaseError>();
            find_unique_violation(&DriverWrap { inner: *my })
        }
        _ => {
            let lite = db.downcast::<sqlx::sqlite::SqliteError>();
            find_unique_violation(&DriverWrap { inner: *lite })
        }
    };
    assert_names(v, &biz, d);

    // A value that itself contains MariaDB's marker text.
    let e = duplicate(&biz, "evil' for key 'uk_fake").await;
    assert_names(find_unique_violation(&e), &biz, d);

    // Not a unique violation: nothing found.
    let other = match &biz.pool {
        BizPool::Pg(p) => sqlx::query("SELECT * FROM no_such_table_xyz")
            .execute(p)
            .await
            .unwrap_err(),
        BizPool::My(p) => sqlx::query("SELECT * FROM no_such_table_xyz")
            .execute(p)
            .await
            .unwrap_err(),
        BizPool::Lite(p) => sqlx::query("SELECT * FROM no_such_table_xyz")
            .execute(p)
            .await
            .unwrap_err(),
    };
    assert_eq!(find_unique_violation(&other), None);
    assert_eq!(biz.duplicates().await, 0);
}

async fn catalog_finds_unique_indexes(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    let cat = biz.catalog();
    let def = cat
        .unique_constraint(&biz.index)
        .await
        .unwrap()
        .expect("the unique index exists");
    assert!(
        biz.table.ends_with(&def.table),
        "{} vs {}",
        biz.table,
        def.table
    );
    assert_eq!(def.columns, ["order_no"]);
    assert_eq!(
        cat.unique_constraint("uk_does_not_exist_anywhere")
            .await
            .unwrap(),
        None
    );
    // A plain (non-unique) index is not a backstop; a two-column unique one lists both.
    let (plain, pair) = (
        format!("ix_amount_{}", &biz.index[10..]),
        format!("uk_pair_{}", &biz.index[10..]),
    );
    let t = &biz.table;
    let ddl = match d {
        Dialect::MySql => format!(
            "CREATE INDEX {plain} ON {t} (amount); CREATE UNIQUE INDEX {pair} ON {t} (amount, order_no)"
        ),
        _ => format!(
            "CREATE INDEX {plain} ON {t} (amount); CREATE UNIQUE INDEX {pair} ON {t} (amount, order_no)"
        ),
    };
    match &biz.pool {
        BizPool::Pg(p) => drop(
            sqlx::raw_sql(sqlx::AssertSqlSafe(ddl))
                .execute(p)
                .await
                .unwrap(),
        ),
        BizPool::My(p) => drop(
            sqlx::raw_sql(sqlx::AssertSqlSafe(ddl))
                .execute(p)
                .await
                .unwrap(),
        ),
        BizPool::Lite(p) => drop(
            sqlx::raw_sql(sqlx::AssertSqlSafe(ddl))
                .execute(p)
                .await
                .unwrap(),
        ),
    }
    assert_eq!(cat.unique_constraint(&plain).await.unwrap(), None);
    assert_eq!(
        cat.unique_constraint(&pair).await.unwrap().unwrap().columns,
        ["amount", "order_no"]
    );
}

/// The layered guard in miniature: the fast store lost the key, the unique index
/// catches the duplicate, `on_conflict` returns the first order, counted as a
/// backstop hit. On SQLite the catalog maps the columns to the index name.
async fn guard_backstop_replays_through_catalog(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(format!("bk-{}", crate::support::sql::suffix()))
        .constraints(biz.catalog())
        .build()
        .unwrap();
    let call = |idem: Idem, biz: Biz, backstop: String| async move {
        let b2 = biz.clone();
        let g = idem.guard("order", &[&"o-9"]).backstop(backstop);
        g.run_with(
            Hooks::new()
                .detect(|e: &anyhow::Error| Some(e.as_ref()))
                .on_conflict(move || async move { Ok(b2.find("o-9").await?) }),
            || async move { Ok::<_, anyhow::Error>(biz.insert("o-9").await?) },
        )
        .await
    };
    let first = call(idem.clone(), biz.clone(), biz.index.clone())
        .await
        .unwrap();
    assert_eq!(first.how(), How::Executed);
    store.lose_all_keys().await.unwrap();
    let second = call(idem.clone(), biz.clone(), biz.index.clone())
        .await
        .unwrap();
    assert_eq!(second.how(), How::Backstop);
    assert_eq!(second.value(), first.value());
    assert_eq!(idem.stats().backstop_hits(), 1);
    // ... and it was stored: the next call is a plain replay.
    let third = call(idem.clone(), biz.clone(), biz.index.clone())
        .await
        .unwrap();
    assert_eq!(third.how(), How::Replayed);
    // A violation of some other constraint is not this backstop: the error stays.
    // (Issue 24 n: the other constraint exists. A backstop name the database
    // does not have is a misdeclaration, a typed `Error::Config`, below.)
    let other = format!("{}_other", biz.index);
    // On (id, order_no): never violated by the second insert.
    let create = format!(
        "CREATE UNIQUE INDEX {other} ON {} (id, order_no)",
        biz.table
    );
    match &biz.pool {
        crate::support::sql::BizPool::Pg(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(create))
            .execute(p)
            .await
            .map(drop),
        crate::support::sql::BizPool::My(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(create))
            .execute(p)
            .await
            .map(drop),
        crate::support::sql::BizPool::Lite(p) => sqlx::raw_sql(sqlx::AssertSqlSafe(create))
            .execute(p)
            .await
            .map(drop),
    }
    .unwrap();
    store.lose_all_keys().await.unwrap();
    let r = call(idem.clone(), biz.clone(), other).await;
    let e = r.expect_err("not our backstop");
    assert!(find_unique_violation(e.as_ref()).is_some());
    assert!(e.downcast_ref::<Error>().is_none(), "{e:?}");
    assert_eq!(biz.count().await, 1);
    store.lose_all_keys().await.unwrap();
    let r = call(idem.clone(), biz.clone(), "uk_some_other_index".into()).await;
    let e = r.expect_err("not our backstop");
    assert!(
        matches!(e.downcast_ref::<Error>(), Some(Error::Config(m)) if m.contains("uk_some_other_index")),
        "a misdeclared backstop is a typed error: {e:?}"
    );
    assert_eq!(biz.count().await, 1);
}

async fn verify_reports_missing_backstop(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    let idem = Idem::builder()
        .shared_store(fx.dyn_store())
        .constraints(biz.catalog())
        .build()
        .unwrap();
    assert!(idem.verify(&[biz.index.as_str()]).await.is_ok());
    let e = idem
        .verify(&[biz.index.as_str(), "uk_missing_backstop"])
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("uk_missing_backstop") && !msg.contains(&biz.index),
        "{msg}"
    );
}
