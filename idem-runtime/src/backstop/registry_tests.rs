//! Unit tests of `registry.rs` (kept apart: the file limit).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::store::{BoxFuture, StoreError};

/// A catalog over a fixed list of indexes, counting its lookups.
#[derive(Default)]
struct Fixed {
    defs: Vec<(&'static str, &'static str, &'static [&'static str])>,
    lookups: AtomicUsize,
}

impl ConstraintCatalog for Fixed {
    fn unique_constraint<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ConstraintDef>, StoreError>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let def = self
            .defs
            .iter()
            .find(|d| d.0 == name)
            .map(|d| ConstraintDef {
                table: d.1.to_owned(),
                columns: d.2.iter().map(|c| (*c).to_owned()).collect(),
            });
        Box::pin(async move { Ok(def) })
    }
}

fn unnamed(table: Option<&str>, columns: &[&str]) -> UniqueViolation {
    UniqueViolation {
        constraint: None,
        table: table.map(str::to_owned),
        columns: columns.iter().map(|c| (*c).to_owned()).collect(),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// A named violation is matched by name; an unnamed one by the catalog's
/// table and columns (in any order), looked up once per name.
#[test]
fn matches_by_name_or_through_the_cached_catalog() {
    let catalog = Arc::new(Fixed {
        defs: vec![("uk_order", "orders", &["user_id", "req_id"])],
        ..Fixed::default()
    });
    let b = Backstops::new(Some(catalog.clone()), Detection::default());
    let named = UniqueViolation {
        constraint: Some("uk_order".into()),
        table: None,
        columns: Vec::new(),
    };
    block_on(async {
        assert!(b.matches("uk_order", &named).await);
        assert!(!b.matches("uk_other", &named).await);
        assert_eq!(
            catalog.lookups.load(Ordering::SeqCst),
            0,
            "named: no lookup"
        );
        let v = unnamed(Some("orders"), &["req_id", "user_id"]);
        assert!(b.matches("uk_order", &v).await);
        assert!(b.matches("uk_order", &v).await);
        assert!(
            !b.matches(
                "uk_order",
                &unnamed(Some("refunds"), &["req_id", "user_id"])
            )
            .await
        );
        assert!(
            !b.matches("uk_order", &unnamed(Some("orders"), &["req_id"]))
                .await
        );
        assert_eq!(catalog.lookups.load(Ordering::SeqCst), 1, "cached per name");
        assert!(!b.matches("uk_missing", &v).await);
        assert!(!b.matches("uk_missing", &v).await);
        assert_eq!(
            catalog.lookups.load(Ordering::SeqCst),
            2,
            "absence cached too"
        );
    });
    // Without a catalog an unnamed violation cannot be told apart: it counts.
    let bare = Backstops::new(None, Detection::default());
    assert!(block_on(
        bare.matches("uk_order", &unnamed(Some("t"), &["c"]))
    ));
}

/// `verify` checks every noted name once, plus the extra ones, and names
/// what is missing; declared backstops without a catalog are an error.
#[test]
fn verify_names_missing_constraints() {
    let catalog = Arc::new(Fixed {
        defs: vec![("uk_a", "t", &["a"])],
        ..Fixed::default()
    });
    let b = Backstops::new(Some(catalog.clone()), Detection::default());
    block_on(async {
        assert!(b.verify(&[]).await.is_ok(), "nothing declared");
        b.note("uk_a");
        b.note("uk_a");
        assert!(b.verify(&["uk_a"]).await.is_ok());
        assert_eq!(catalog.lookups.load(Ordering::SeqCst), 1, "deduplicated");
        b.note("uk_b");
        match b.verify(&["uk_c"]).await {
            Err(Error::Verify(m)) => assert!(m.ends_with("uk_b, uk_c"), "{m}"),
            other => panic!("{other:?}"),
        }
        let bare = Backstops::new(None, Detection::default());
        bare.note("uk_a");
        match bare.verify(&[]).await {
            Err(Error::Verify(m)) => assert!(m.contains("no constraint catalog"), "{m}"),
            other => panic!("{other:?}"),
        }
    });
}

/// A detection that cannot see a declared backstop's violations (built-in
/// detection off, a custom detector for something else) fails `verify`
/// naming the backstop; the built-in detection sees every engine's form.
#[test]
fn verify_reports_detection_that_cannot_see_the_backstop() {
    let catalog = || {
        Arc::new(Fixed {
            defs: vec![("uk_a", "t", &["a"])],
            ..Fixed::default()
        })
    };
    let mut blind = Detection::default();
    blind.set_builtin(false);
    blind.push(Arc::new(|_: &(dyn std::error::Error + 'static)| None));
    let b = Backstops::new(Some(catalog()), blind);
    b.note("uk_a");
    match block_on(b.verify(&[])) {
        Err(Error::Verify(m)) => assert!(m.contains("cannot see") && m.contains("uk_a"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut custom = Detection::default();
    custom.set_builtin(false);
    custom.push(Arc::new(|e: &(dyn std::error::Error + 'static)| {
        e.to_string()
            .contains("uk_a")
            .then(|| UniqueViolation::named("uk_a"))
    }));
    let b = Backstops::new(Some(catalog()), custom);
    b.note("uk_a");
    assert!(
        block_on(b.verify(&[])).is_ok(),
        "a custom detector that sees it"
    );
    let b = Backstops::new(Some(catalog()), Detection::default());
    b.note("uk_a");
    assert!(block_on(b.verify(&[])).is_ok(), "built-in");
}
