//! Keys, scenes and fingerprints on the memory store: distinct requests never
//! share a record, and where two functions could, `SceneConflict` says so before
//! any store traffic and before the body runs.

use std::collections::HashMap;

use idem::{Error, Idem};

use crate::macros::support::{AppError, Counter, handle};

fn is_scene_conflict<T: std::fmt::Debug>(r: &Result<T, AppError>) -> bool {
    matches!(r, Err(AppError::Idem(Error::SceneConflict { .. })))
}

fn is_mismatch<T: std::fmt::Debug>(r: &Result<T, AppError>) -> bool {
    matches!(r, Err(AppError::Idem(Error::PayloadMismatch { .. })))
}

#[idem::idempotent(key = "keys-pay:<req_id>", handle = idem)]
async fn pay(idem: &Idem, runs: &Counter, req_id: &str) -> Result<String, AppError> {
    let n = runs.hit();
    Ok(format!("{}-{n}", req_id.len()))
}

#[tokio::test]
async fn a_short_value_cannot_forge_the_digest_of_a_long_one() {
    let idem = handle();
    let runs = Counter::default();
    let long = "x".repeat(300);
    assert_eq!(pay(&idem, &runs, &long).await.unwrap(), "300-1");
    // Everything after the scene of the hashed key, sent as the value itself.
    let hashed = idem.key("keys-pay", &[&long.as_str()]);
    let forged = &hashed.as_str()["it:keys-pay:".len()..];
    assert!(hashed.as_str().len() <= idem::key::MAX_KEY_LEN, "{hashed}");
    let second = pay(&idem, &runs, forged).await.unwrap();
    assert_eq!(
        second,
        format!("{}-2", forged.len()),
        "the forged value replayed the long one's result"
    );
    assert_eq!(runs.get(), 2);
    // And the long value still replays its own result.
    assert_eq!(pay(&idem, &runs, &long).await.unwrap(), "300-1");
}

#[idem::idempotent(key = "keys-order:create:<id>", handle = idem)]
async fn create_order(idem: &Idem, runs: &Counter, id: u32) -> Result<String, AppError> {
    runs.hit();
    Ok(format!("created {id}"))
}

#[idem::idempotent(key = "keys-order:<action>:<id>", handle = idem)]
async fn order_action(
    idem: &Idem,
    runs: &Counter,
    action: &str,
    id: u32,
) -> Result<String, AppError> {
    runs.hit();
    Ok(format!("{action} {id}"))
}

#[tokio::test]
async fn a_scene_extending_another_functions_scene_conflicts() {
    // Both orders of first use: the second function is refused either way.
    let idem = handle();
    let (a, b) = (Counter::default(), Counter::default());
    assert_eq!(create_order(&idem, &a, 5).await.unwrap(), "created 5");
    let r = order_action(&idem, &b, "create", 5).await;
    assert!(is_scene_conflict(&r), "{r:?}");
    assert_eq!((a.get(), b.get()), (1, 0));

    let idem = handle();
    let (a, b) = (Counter::default(), Counter::default());
    assert_eq!(order_action(&idem, &b, "pay", 1).await.unwrap(), "pay 1");
    let r = create_order(&idem, &a, 5).await;
    assert!(is_scene_conflict(&r), "{r:?}");
    assert_eq!((a.get(), b.get()), (0, 1));
    assert_eq!(idem.stats().count("executed"), 1, "no store traffic");
}

mod twins {
    use idem::Idem;

    use crate::macros::support::{AppError, Counter};

    pub(super) struct Left;
    pub(super) struct Right;

    impl Left {
        #[idem::idempotent(key = "keys-twin:<id>", handle = idem)]
        pub(super) async fn make(idem: &Idem, runs: &Counter, id: u32) -> Result<String, AppError> {
            runs.hit();
            Ok(format!("left {id}"))
        }
    }

    impl Right {
        #[idem::idempotent(key = "keys-twin:<id>", handle = idem)]
        pub(super) async fn make(idem: &Idem, runs: &Counter, id: u32) -> Result<String, AppError> {
            runs.hit();
            Ok(format!("right {id}"))
        }
    }
}

#[tokio::test]
async fn same_named_methods_of_two_impls_are_two_functions() {
    let idem = handle();
    let (l, r) = (Counter::default(), Counter::default());
    assert_eq!(twins::Left::make(&idem, &l, 1).await.unwrap(), "left 1");
    assert_eq!(twins::Left::make(&idem, &l, 1).await.unwrap(), "left 1");
    let right = twins::Right::make(&idem, &r, 1).await;
    assert!(is_scene_conflict(&right), "{right:?}");
    assert_eq!((l.get(), r.get()), (1, 0));
}

#[idem::idempotent(key = "keys-mix:<id>", handle = idem)]
async fn mixed(idem: &Idem, runs: &Counter, id: u32) -> Result<String, AppError> {
    runs.hit();
    Ok(format!("macro {id}"))
}

async fn plain(idem: &Idem, runs: &Counter, scene: &str, id: u32) -> Result<String, AppError> {
    idem.guard(scene, &[&id])
        .run(|| async move {
            runs.hit();
            Ok::<_, AppError>(format!("plain {id}"))
        })
        .await
        .map(idem::Outcome::into_inner)
}

#[tokio::test]
async fn the_plain_guard_and_a_macro_function_cannot_share_a_scene() {
    // Same scene, same rendered key (`it:keys-mix:5`).
    let idem = handle();
    let (m, p) = (Counter::default(), Counter::default());
    assert_eq!(mixed(&idem, &m, 5).await.unwrap(), "macro 5");
    let r = plain(&idem, &p, "keys-mix", 5).await;
    assert!(is_scene_conflict(&r), "{r:?}");
    assert_eq!((m.get(), p.get()), (1, 0));

    // The plain call first: the macro function is refused.
    let idem = handle();
    let (m, p) = (Counter::default(), Counter::default());
    assert_eq!(plain(&idem, &p, "keys-mix", 5).await.unwrap(), "plain 5");
    let r = mixed(&idem, &m, 5).await;
    assert!(is_scene_conflict(&r), "{r:?}");
    assert_eq!((m.get(), p.get()), (0, 1));

    // A plain scene that is the first segment of a macro scene.
    let idem = handle();
    let (a, p) = (Counter::default(), Counter::default());
    assert_eq!(plain(&idem, &p, "keys-order", 5).await.unwrap(), "plain 5");
    let r = create_order(&idem, &a, 5).await;
    assert!(is_scene_conflict(&r), "{r:?}");
    assert_eq!((a.get(), p.get()), (0, 1));
}

#[tokio::test]
async fn the_plain_scene_is_escaped_like_a_part() {
    let idem = handle();
    let runs = Counter::default();
    let run = |scene: &'static str, parts: Vec<&'static str>| {
        let idem = &idem;
        let runs = &runs;
        async move {
            let parts: Vec<&(dyn idem::KeyPart + Sync)> = parts
                .iter()
                .map(|p| p as &(dyn idem::KeyPart + Sync))
                .collect();
            idem.guard(scene, &parts)
                .run(|| async move { Ok::<_, Error>(runs.hit()) })
                .await
                .map(idem::Outcome::into_inner)
        }
    };
    assert_eq!(run("keys-a:b", vec!["c"]).await.unwrap(), 1);
    assert_eq!(run("keys-a", vec!["b", "c"]).await.unwrap(), 2);
    assert_eq!(run("keys-a:b", vec!["c"]).await.unwrap(), 1);
    assert_eq!(runs.get(), 2);
    assert_ne!(
        idem.key("keys-a:b", &[&"c"]),
        idem.key("keys-a", &[&"b", &"c"])
    );
}

#[tokio::test]
async fn a_key_rendered_for_another_namespace_is_refused() {
    let idem = handle();
    let runs = Counter::default();
    let foreign = idem::Key::from_parts("", "it", &[&"keys-mix", &5u32]);
    let r = idem
        .guard_key(foreign)
        .run(|| async { Ok::<_, Error>(runs.hit()) })
        .await;
    assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
    assert_eq!(runs.get(), 0);
    // The handle's own keys go through.
    let own = idem.key("keys-own", &[&5u32]);
    let r = idem
        .guard_key(own)
        .run(|| async { Ok::<_, Error>(runs.hit()) })
        .await;
    assert_eq!(r.unwrap().into_inner(), 1);
}

#[idem::idempotent(key = "keys-opt:<v>", handle = idem)]
async fn nested(idem: &Idem, runs: &Counter, v: Option<Option<&str>>) -> Result<String, AppError> {
    let n = runs.hit();
    Ok(format!("{v:?}-{n}"))
}

#[tokio::test]
async fn nested_options_render_distinct_keys() {
    let idem = handle();
    let runs = Counter::default();
    assert_eq!(nested(&idem, &runs, None).await.unwrap(), "None-1");
    assert_eq!(
        nested(&idem, &runs, Some(None)).await.unwrap(),
        "Some(None)-2"
    );
    assert_eq!(
        nested(&idem, &runs, Some(Some("x"))).await.unwrap(),
        "Some(Some(\"x\"))-3"
    );
    assert_eq!(
        nested(&idem, &runs, Some(None)).await.unwrap(),
        "Some(None)-2"
    );
    assert_eq!(nested(&idem, &runs, None).await.unwrap(), "None-1");
    assert_eq!(runs.get(), 3);
    // Non-nested options keep their form: `None` is `%-`, `Some(v)` is `v`.
    assert_eq!(
        idem.key("s", &[&None::<&str>, &Some("x")]).as_str(),
        "it:s:%-:x"
    );
}

#[idem::idempotent(key = "keys-price:<id>", fingerprint = [price], handle = idem)]
async fn price(idem: &Idem, runs: &Counter, id: u32, price: Option<f64>) -> Result<u32, AppError> {
    runs.hit();
    Ok(id)
}

#[tokio::test]
async fn nan_and_infinities_are_payloads_of_their_own() {
    let idem = handle();
    let runs = Counter::default();
    assert_eq!(price(&idem, &runs, 1, None).await.unwrap(), 1);
    for changed in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let r = price(&idem, &runs, 1, Some(changed)).await;
        assert!(is_mismatch(&r), "{changed} replayed as None: {r:?}");
    }
    assert_eq!(price(&idem, &runs, 2, Some(f64::NAN)).await.unwrap(), 2);
    // Any NaN is the same NaN.
    let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
    assert_eq!(price(&idem, &runs, 2, Some(other_nan)).await.unwrap(), 2);
    let r = price(&idem, &runs, 2, Some(f64::INFINITY)).await;
    assert!(is_mismatch(&r), "{r:?}");
    assert_eq!(runs.get(), 2);
}

#[idem::idempotent(key = "keys-wide:<id>", fingerprint = [amount, tags], handle = idem)]
async fn wide(
    idem: &Idem,
    runs: &Counter,
    id: u32,
    amount: u128,
    tags: &HashMap<u32, String>,
) -> Result<u32, AppError> {
    runs.hit();
    Ok(id)
}

#[tokio::test]
async fn wide_integers_and_non_string_map_keys_fingerprint() {
    let idem = handle();
    let runs = Counter::default();
    let tags: HashMap<u32, String> = (0..20).map(|i| (i, format!("t{i}"))).collect();
    let big = u128::MAX - 7;
    assert_eq!(wide(&idem, &runs, 1, big, &tags).await.unwrap(), 1);
    // A map built in another order is the same payload.
    let reordered: HashMap<u32, String> = (0..20).rev().map(|i| (i, format!("t{i}"))).collect();
    assert_eq!(wide(&idem, &runs, 1, big, &reordered).await.unwrap(), 1);
    assert!(is_mismatch(&wide(&idem, &runs, 1, big - 1, &tags).await));
    let mut changed = tags.clone();
    changed.insert(3, "x".into());
    assert!(is_mismatch(&wide(&idem, &runs, 1, big, &changed).await));
    assert_eq!(runs.get(), 1);
}
