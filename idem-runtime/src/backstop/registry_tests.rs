//! Unit tests of `registry.rs` (kept apart: the file limit).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::store::{BoxFuture, StoreError};

/// A catalog over a fixed list of indexes, counting its lookups.
#[derive(Default)]
struct Fixed {
    defs: Vec<(&'static str, &'static str, &'static [&'static str])>,
    lookups: AtomicUsize,
    /// Lists its names for "did you mean" (`unique_names`).
    lists: bool,
}

/// `verify` without link-time declarations (the unit tests' own).
async fn verify(b: &Backstops, extra: &[&str]) -> Result<Vec<String>, Error> {
    b.verify(extra, &[]).await
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

    fn unique_names(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let names = self
            .defs
            .iter()
            .filter(|_| self.lists)
            .map(|d| d.0.to_owned())
            .collect();
        Box::pin(async move { Ok(names) })
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
        assert!(verify(&b, &[]).await.is_ok(), "nothing declared");
        b.note("uk_a");
        b.note("uk_a");
        assert!(verify(&b, &["uk_a"]).await.is_ok());
        assert_eq!(catalog.lookups.load(Ordering::SeqCst), 1, "deduplicated");
        b.note("uk_b");
        match verify(&b, &["uk_c"]).await {
            Err(Error::Verify(m)) => assert!(m.ends_with("uk_b, uk_c"), "{m}"),
            other => panic!("{other:?}"),
        }
        let bare = Backstops::new(None, Detection::default());
        bare.note("uk_a");
        match verify(&bare, &[]).await {
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
    match block_on(verify(&b, &[])) {
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
        block_on(verify(&b, &[])).is_ok(),
        "a custom detector that sees it"
    );
    let b = Backstops::new(Some(catalog()), Detection::default());
    b.note("uk_a");
    assert!(block_on(verify(&b, &[])).is_ok(), "built-in");
}

/// A function declared with its own `handle = …` that no handle attributes
/// to itself (`IdemBuilder::functions`) is still checked: its backstop passes
/// silently when this handle's catalog has it, and is a warning naming the
/// function, the closest name and how to attribute it when it has not (it may
/// be another handle's, so not an error). An attributed one is an error.
#[test]
fn verify_warns_about_backstops_of_functions_no_handle_attributes() {
    let catalog = || {
        Arc::new(Fixed {
            defs: vec![("uk_app_orders_order_no", "orders", &["order_no"])],
            lists: true,
            ..Fixed::default()
        })
    };
    let typo = Declared {
        function: "app::orders::create_order",
        constraint: Some("uk_app_order_no"),
        own_handle: true,
    };
    let right = Declared {
        function: "app::orders::find_order",
        constraint: Some("uk_app_orders_order_no"),
        own_handle: true,
    };
    let b = Backstops::new(Some(catalog()), Detection::default());
    let warnings = block_on(b.verify(&[], &[&typo, &right])).expect("only a warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.contains("uk_app_order_no (")
            && w.contains("`app::orders::create_order`")
            && w.contains("did you mean `uk_app_orders_order_no`?")
            && w.contains(".functions(module_path!())")
            && !w.contains("find_order"),
        "{w}"
    );
    // Attributed to this handle, the same declaration is an error.
    let decls = HandleDecls {
        plain: Vec::new(),
        modules: vec!["app::orders".into()],
    };
    let b = Backstops::declared(Some(catalog()), Detection::default(), decls);
    match block_on(b.verify(&[], &[&typo, &right])) {
        Err(Error::Verify(m)) => assert!(
            m.contains("uk_app_order_no")
                && m.contains("app::orders::create_order")
                && m.contains("did you mean `uk_app_orders_order_no`?"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    // No catalog on this handle: it cannot check, and says so.
    let bare = Backstops::new(None, Detection::default());
    let warnings = block_on(bare.verify(&[], &[&typo])).expect("only a warning");
    assert!(
        warnings.len() == 1
            && warnings[0].contains("`app::orders::create_order`")
            && warnings[0].contains("no constraint catalog"),
        "{warnings:?}"
    );
}
