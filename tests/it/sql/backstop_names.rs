//! Backstop names are checked at start-up: `verify()` checks
//! every backstop the program declares, the `#[idempotent(backstop = "…")]`
//! functions' (registered at link time) and the plain-API ones registered on
//! the handle, without a second list. A typo fails naming the function, the
//! missing constraint and the closest existing name. On PostgreSQL, MariaDB
//! and SQLite.

use idem::db::Dialect;
use std::sync::Arc;

use idem::{Error, FaultyStore, Idem, MemoryStore};

use crate::support::AppError;
use crate::support::sql::{Biz, BizPool, Fixture};

/// The index the functions below mean; created beside the fixture's own.
const INDEX: &str = "uk_named_order_amount";

mod typo {
    use super::*;

    #[idem::idempotent(key = "bn-typo:<order_no>", backstop = "uk_named_ordr_amount", handle = idem)]
    pub(super) async fn create_order(
        idem: &Idem,
        biz: &Biz,
        order_no: &str,
    ) -> Result<i64, AppError> {
        Ok(biz.insert(order_no).await?)
    }
}

mod right {
    use super::*;

    #[idem::idempotent(key = "bn-right:<order_no>", backstop = "uk_named_order_amount", handle = idem)]
    pub(super) async fn create_order(
        idem: &Idem,
        biz: &Biz,
        order_no: &str,
    ) -> Result<i64, AppError> {
        Ok(biz.insert(order_no).await?)
    }
}

async fn named_index(biz: &Biz) {
    let sql = format!(
        "CREATE UNIQUE INDEX {INDEX} ON {} (order_no, amount)",
        biz.table
    );
    let sql = sqlx::AssertSqlSafe(sql);
    match &biz.pool {
        BizPool::Pg(p) => sqlx::raw_sql(sql).execute(p).await.map(drop),
        BizPool::My(p) => sqlx::raw_sql(sql).execute(p).await.map(drop),
        BizPool::Lite(p) => sqlx::raw_sql(sql).execute(p).await.map(drop),
    }
    .expect("create the named index");
}

/// The handle's builder, serving the annotated functions of `module`.
fn serving(fx: &Fixture, biz: &Biz, module: &str) -> idem::IdemBuilder {
    Idem::builder()
        .shared_store(fx.dyn_store())
        .namespace(crate::support::unique_ns("bn"))
        .constraints(biz.catalog())
        .functions(module)
}

fn verify_error(r: Result<Vec<idem::store::Warning>, Error>) -> String {
    match r {
        Err(Error::Verify(m)) => m,
        other => panic!("verify must fail on a misspelt backstop, got {other:?}"),
    }
}

crate::support::sql::per_database!(
    a_backstop_typo_fails_verify_naming_function_and_closest_name,
    after_a_lost_record_a_misspelt_backstop_is_a_typed_error,
);

async fn a_backstop_typo_fails_verify_naming_function_and_closest_name(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    named_index(&biz).await;

    // The annotated function with the typo: nothing but `verify(&[])`.
    let idem = serving(&fx, &biz, concat!(module_path!(), "::typo"))
        .build()
        .unwrap();
    let m = verify_error(idem.verify(&[]).await);
    assert!(
        m.contains("uk_named_ordr_amount")
            && m.contains("backstop_names::typo::create_order")
            && m.contains("did you mean `uk_named_order_amount`?"),
        "{m}"
    );
    // The same declaration spelt right passes.
    let idem = serving(&fx, &biz, concat!(module_path!(), "::right"))
        .build()
        .unwrap();
    idem.verify(&[]).await.expect("the right name passes");
    assert!(right::create_order(&idem, &biz, "o-1").await.unwrap() > 0);

    // A plain-API backstop registered on the handle, misspelt.
    let plain = serving(&fx, &biz, concat!(module_path!(), "::right"))
        .backstop("shop::refund", "uk_named_order_amout")
        .build()
        .unwrap();
    let m = verify_error(plain.verify(&[]).await);
    assert!(
        m.contains("uk_named_order_amout")
            && m.contains("`shop::refund`")
            && m.contains("did you mean `uk_named_order_amount`?")
            && !m.contains("right::create_order"),
        "{m}"
    );

    // A handle that serves no module still looks the `handle = …` functions'
    // backstops up: the typo is a warning naming the function, the closest
    // name and how to attribute the function to the handle.
    let unattributed = Idem::builder()
        .shared_store(fx.dyn_store())
        .namespace(crate::support::unique_ns("bn"))
        .constraints(biz.catalog())
        .build()
        .unwrap();
    let warnings = unattributed
        .verify(&[])
        .await
        .expect("a warning, not an error");
    assert!(
        warnings.iter().any(|w| w.0.contains("uk_named_ordr_amount")
            && w.0.contains("backstop_names::typo::create_order")
            && w.0.contains("did you mean `uk_named_order_amount`?")
            && w.0.contains(".functions(module_path!())")),
        "{warnings:?}"
    );
}

/// Without `verify()`: the record store lost the key, the body runs again and
/// its insert violates the unique index. Under the misspelt backstop that
/// violation cannot be matched; the caller gets a typed `Error::Config`
/// naming the declared name and the closest existing one, never the
/// driver's raw unique-violation text (which reached HTTP clients as a 500).
async fn after_a_lost_record_a_misspelt_backstop_is_a_typed_error(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;
    named_index(&biz).await;
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(crate::support::unique_ns("bn-lost"))
        .constraints(biz.catalog())
        .build()
        .unwrap();
    let first = typo::create_order(&idem, &biz, "o-7").await.unwrap();
    assert!(first > 0);
    store.lose_all_keys().await.unwrap();
    let e = typo::create_order(&idem, &biz, "o-7")
        .await
        .expect_err("the second insert violates the unique index");
    let m = match e {
        AppError::Idem(Error::Config(m)) => m,
        other => panic!("a typed error, not the driver's text: {other:?}"),
    };
    assert!(
        m.contains("uk_named_ordr_amount") && m.contains("did you mean `uk_named_order_amount`?"),
        "{m}"
    );
    for raw in [
        "duplicate key value",
        "Duplicate entry",
        "UNIQUE constraint failed",
    ] {
        assert!(!m.contains(raw), "no driver text: {m}");
    }
    assert_eq!(
        biz.count().await,
        1,
        "the body's second insert did not apply"
    );
}
