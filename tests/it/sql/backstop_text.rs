//! Backstop detection without idem's sqlx types: a real unique violation from
//! each database, re-wrapped in error types idem has never seen (what an
//! application on another sqlx version hands the guard: same text, different
//! types), is still found, matched to the declared index and replayed through
//! `on_conflict`, counted as a backstop hit. The scratch crate under
//! `tests/skew/` shows the same with sqlx 0.8 itself.

use std::fmt;
use std::sync::Arc;

use idem::backstop::find_unique_violation;
use idem::db::Dialect;
use idem::{FaultyStore, Hooks, How, Idem, MemoryStore};

use crate::support::sql::{Biz, Fixture};

/// A database error as another sqlx version's type would carry it: its own
/// type, the same `Display` and `Debug` text.
struct Foreign {
    display: String,
    debug: String,
}

impl fmt::Debug for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.debug)
    }
}
impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}
impl std::error::Error for Foreign {}

/// `sqlx::Error::Database` of that other version: its own type too.
#[derive(Debug, thiserror::Error)]
#[error("error returned from database: {0}")]
struct ForeignSqlx(#[source] Foreign);

/// The application's error enum around it.
#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[source] ForeignSqlx),
}

/// The driver-level error of `e`, copied into foreign types.
fn foreign(e: sqlx::Error) -> ForeignSqlx {
    let db = e.into_database_error().expect("a database error");
    ForeignSqlx(Foreign {
        display: db.to_string(),
        debug: format!("{db:?}"),
    })
}

async fn insert_foreign(biz: &Biz, order_no: &str) -> Result<i64, AppError> {
    biz.insert(order_no)
        .await
        .map_err(|e| AppError::Db(foreign(e)))
}

crate::support::sql::per_database!(foreign_violation_is_found_and_replayed);

async fn foreign_violation_is_found_and_replayed(d: Dialect) {
    let fx = Fixture::new(d).await;
    let biz = Biz::new(&fx).await;

    // Found through the text alone, named as the typed path names it.
    insert_foreign(&biz, "f-1").await.unwrap();
    let dup = insert_foreign(&biz, "f-1").await.unwrap_err();
    let v = find_unique_violation(&dup).expect("text detection finds the violation");
    match d {
        Dialect::Sqlite => assert_eq!(
            (v.table.as_deref(), &v.columns[..]),
            (Some("orders"), &["order_no".to_owned()][..])
        ),
        _ => assert_eq!(v.constraint.as_deref(), Some(biz.index.as_str())),
    }

    // The layered guard: the fast store loses the record, the index catches the
    // retry, `on_conflict` loads the first order.
    let store = Arc::new(FaultyStore::new(MemoryStore::new()));
    let idem = Idem::builder()
        .shared_store(store.clone())
        .namespace(format!("bt-{}", crate::support::sql::suffix()))
        .constraints(biz.catalog())
        .build()
        .unwrap();
    let runs = crate::support::Counter::default();
    let call = || {
        let (biz, b2, runs) = (biz.clone(), biz.clone(), runs.clone());
        idem.guard("order", &[&"f-2"])
            .backstop(biz.index.clone())
            .run_with(
                Hooks::new()
                    .detect(idem::std_error)
                    .on_conflict(move || async move {
                        b2.find("f-2").await.map_err(|e| AppError::Db(foreign(e)))
                    }),
                move || async move {
                    runs.hit();
                    insert_foreign(&biz, "f-2").await
                },
            )
    };
    let first = call().await.unwrap();
    assert_eq!(first.how(), How::Executed);
    store.lose_all_keys().await.unwrap();
    let second = call()
        .await
        .expect("the backstop turns the duplicate into a replay");
    assert_eq!(second.how(), How::Backstop);
    assert_eq!(second.value(), first.value());
    assert_eq!(
        runs.get(),
        2,
        "the retry ran the body; the index stopped it"
    );
    assert_eq!(idem.stats().backstop_hits(), 1);
    assert_eq!(biz.count().await, 2, "f-1 and f-2, once each");

    // `verify` agrees the detection sees this backstop on this engine.
    assert!(idem.verify(&[biz.index.as_str()]).await.is_ok());
    // ... and says so when it cannot (built-in detection off, nothing else).
    let blind = Idem::builder()
        .store(MemoryStore::new())
        .constraints(biz.catalog())
        .builtin_violation_detection(false)
        .build()
        .unwrap();
    let e = blind.verify(&[biz.index.as_str()]).await.unwrap_err();
    assert!(e.to_string().contains("cannot see"), "{e}");
}
