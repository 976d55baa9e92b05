use super::escape::escape_into;
use super::*;

fn key(parts: &[&(dyn KeyPart + Sync)]) -> String {
    Key::from_parts("ns", "scene", parts).as_str().to_owned()
}

#[test]
fn escapes_separators_and_braces() {
    assert_eq!(
        key(&[&"a:b", &"{x}", &"50%"]),
        "ns:scene:a%3Ab:%7Bx%7D:50%25"
    );
    assert_eq!(key(&[&"line\nbreak\0"]), "ns:scene:line%0Abreak%00");
}

#[test]
fn none_differs_from_empty_and_from_text() {
    let none: Option<&str> = None;
    assert_ne!(key(&[&none]), key(&[&""]));
    assert_ne!(key(&[&none]), key(&[&"%-"]));
}

#[test]
fn nested_options_differ_and_single_options_keep_their_form() {
    let none: Option<Option<&str>> = None;
    let some_none: Option<Option<&str>> = Some(None);
    let some_some: Option<Option<&str>> = Some(Some("x"));
    assert_eq!(key(&[&none]), "ns:scene:%-");
    assert_eq!(key(&[&some_none]), "ns:scene:%+%-");
    assert_eq!(key(&[&some_some]), "ns:scene:x");
    assert_eq!(key(&[&Some(Some(Some(None::<u8>)))]), "ns:scene:%+%+%+%-");
    assert_eq!(key(&[&Some("x"), &None::<u8>]), "ns:scene:x:%-");
}

#[test]
fn long_keys_are_hashed_but_keep_the_scene() {
    let big = "x".repeat(10_000);
    let k = Key::from_parts("ns", "scene", &[&big.as_str()]);
    assert!(k.as_str().len() <= MAX_KEY_LEN);
    assert!(k.as_str().starts_with("ns:scene:%#"), "{k}");
    assert_eq!(k.as_str().len(), "ns:scene:%#".len() + 40);
    assert_eq!(k.scope(), "ns:scene");
    assert_eq!(k.scene(), "scene");
    let other = Key::from_parts("ns", "scene", &[&format!("{big}y").as_str()]);
    assert_ne!(k, other);
}

#[test]
fn a_short_part_cannot_forge_a_hashed_key() {
    let big = "x".repeat(300);
    let hashed = Key::from_parts("ns", "pay", &[&big.as_str()]);
    let forged = &hashed.as_str()["ns:pay:".len()..];
    assert_ne!(Key::from_parts("ns", "pay", &[&forged]), hashed);
    // Nor the old form of the marker.
    let old = format!("#{}", &forged[2..]);
    assert_ne!(Key::from_parts("ns", "pay", &[&old.as_str()]), hashed);
}

#[test]
fn the_scene_and_namespace_are_escaped() {
    assert_ne!(
        Key::from_parts("ns", "a:b", &[&"c"]).as_str(),
        Key::from_parts("ns", "a", &[&"b", &"c"]).as_str()
    );
    let k = Key::from_parts("n:s", "a:b", &[&"c"]);
    assert_eq!(k.as_str(), "n%3As:a%3Ab:c");
    assert_eq!(k.scene(), "a%3Ab");
    // Configuration names it as written.
    assert_eq!(k.scene_as_written(), "a:b");
    assert!(k.in_namespace("n:s"));
    assert!(!k.in_namespace("n"));
    assert!(!k.in_namespace(""));
    let bare = Key::from_parts("", "a", &[&"c"]);
    assert_eq!(bare.as_str(), "a:c");
    assert!(bare.in_namespace(""));
    assert!(!bare.in_namespace("a"));
}

#[test]
fn scope_excludes_parts() {
    let k = Key::from_parts("shop", "order-create", &[&1u8, &2u8]);
    assert_eq!(k.scope(), "shop:order-create");
}

/// Any part value: text over an alphabet rich in separators and markers, with
/// some long enough to force hashing, or an (optionally nested) `None`.
fn any_part() -> impl proptest::strategy::Strategy<Value = Option<Option<String>>> {
    use proptest::prelude::*;
    let text = prop_oneof![
        "[a:%#+~{}\\-]{0,6}",
        "\\PC{0,12}",
        (0usize..2, 190usize..230).prop_map(|(c, n)| ["x", "%#"][c].repeat(n / 2)),
    ];
    prop_oneof![
        6 => text.prop_map(|t| Some(Some(t))),
        1 => Just(Some(None)),
        1 => Just(None),
    ]
}

proptest::proptest! {
    #[test]
    fn distinct_tuples_never_collide(
        a in proptest::collection::vec(any_part(), 0..4),
        b in proptest::collection::vec(any_part(), 0..4),
    ) {
        proptest::prop_assume!(a != b);
        let render = |v: &[Option<Option<String>>]| {
            let parts: Vec<&(dyn KeyPart + Sync)> =
                v.iter().map(|p| p as &(dyn KeyPart + Sync)).collect();
            Key::from_parts("ns", "scene", &parts)
        };
        let (ka, kb) = (render(&a), render(&b));
        proptest::prop_assert_ne!(&ka, &kb);
        proptest::prop_assert!(ka.as_str().len() <= MAX_KEY_LEN);
    }

    #[test]
    fn distinct_scenes_and_parts_never_collide(
        sa in "[ab:%]{0,3}",
        a in proptest::collection::vec("[ab:%]{0,2}", 0..3),
        sb in "[ab:%]{0,3}",
        b in proptest::collection::vec("[ab:%]{0,2}", 0..3),
        ns in "[n:]{0,2}",
    ) {
        proptest::prop_assume!((&sa, &a) != (&sb, &b));
        let render = |s: &str, v: &[String]| {
            let parts: Vec<&(dyn KeyPart + Sync)> =
                v.iter().map(|p| p as &(dyn KeyPart + Sync)).collect();
            Key::from_parts(&ns, s, &parts)
        };
        proptest::prop_assert_ne!(render(&sa, &a), render(&sb, &b));
    }

    #[test]
    fn escaped_parts_contain_no_separator_and_no_marker(a in "\\PC*") {
        let mut s = String::new();
        escape_into(&mut s, &a);
        let clean = !s.contains(':') && !s.contains('{') && !s.contains('}');
        proptest::prop_assert!(clean, "escaped part {:?} still has a separator", s);
        for mark in ["%-", "%+", "%#"] {
            proptest::prop_assert!(!s.contains(mark), "{:?} contains {}", s, mark);
        }
    }
}

static SPEC: crate::__private::Spec = crate::__private::Spec {
    function: "key::tests",
    template: "",
    scene: "",
    ..crate::__private::Spec::DEFAULT
};

proptest::proptest! {
    /// The macro path (`KeyBuf` chain) and the non-macro path (`Idem::key`,
    /// `Key::from_parts`) render one key for one scene and parts, hashed or not.
    #[test]
    fn macro_and_plain_paths_render_the_same_key(
        scene in "[a-z0-9._#-]{1,10}",
        parts in proptest::collection::vec(any_part(), 1..5),
        ns in "[a-z:%]{0,4}",
    ) {
        let head: &'static str = Box::leak(format!("{scene}:").into_boxed_str());
        let mut buf = crate::__private::KeyBuf::new(&SPEC).lit(head);
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                buf = buf.lit(":");
            }
            buf = buf.arg(p);
        }
        let via_macro = buf.finish().into_key(&super::Namespace::new(&ns));
        let dyn_parts: Vec<&(dyn KeyPart + Sync)> =
            parts.iter().map(|p| p as &(dyn KeyPart + Sync)).collect();
        let plain = Key::from_parts(&ns, &scene, &dyn_parts);
        proptest::prop_assert_eq!(via_macro.as_str(), plain.as_str());
        proptest::prop_assert_eq!(via_macro.scope(), plain.scope());
        proptest::prop_assert_eq!(via_macro.scene(), plain.scene());
        let idem = crate::Idem::builder()
            .store(crate::MemoryStore::new())
            .namespace(ns.clone())
            .build()
            .unwrap();
        let via_handle = idem.key(&scene, &dyn_parts);
        proptest::prop_assert_eq!(via_handle.as_str(), plain.as_str());
        proptest::prop_assert!(via_macro.in_namespace(&ns));
    }
}

/// The namespace written first (the non-macro path) or put in front at the end
/// (the macro path, which learns it late) renders the same key, scope and
/// scene, hashed or not.
#[test]
fn namespace_first_or_last_renders_the_same_key() {
    let long = "y".repeat(MAX_KEY_LEN);
    for ns in ["", "ns", "n:s", "{tenant}"] {
        let escaped = super::Namespace::new(ns);
        let esc = escaped.escaped();
        for part in ["p", "a:b", long.as_str()] {
            let mut last = writer::KeyWriter::with_capacity(8);
            let mut first = writer::KeyWriter::in_namespace(esc, 8);
            for w in [&mut last, &mut first] {
                w.scene("order:create");
                w.literal(":");
                w.part(part);
            }
            let (last, first) = (last.finish(esc), first.finish(esc));
            assert_eq!(first.as_str(), last.as_str(), "{ns} {part}");
            assert_eq!(first.scope(), last.scope());
            assert_eq!(first.scene(), last.scene());
            assert!(first.in_namespace(ns) && first.in_escaped_namespace(esc));
            assert!(first.as_str().len() <= MAX_KEY_LEN);
        }
    }
}

/// Integer parts render exactly as `Display` writes them (the key format
/// must not change), at the edges of every width.
#[test]
fn integer_parts_render_as_display() {
    fn check<T: KeyPart + Sync + std::fmt::Display>(v: T) {
        let k = Key::from_parts("", "s", &[&v]);
        assert_eq!(k.as_str(), format!("s:{v}"));
    }
    for v in [0, 1, 9, 10, u64::MAX, u64::MAX / 10, 1_000_000_007] {
        check(v);
    }
    for v in [0, -1, 1, i64::MIN, i64::MAX, -10, -1_000_000_007] {
        check(v);
    }
    check(u8::MAX);
    check(i8::MIN);
    check(u16::MAX);
    check(i16::MIN);
    check(u32::MAX);
    check(i32::MIN);
    check(usize::MAX);
    check(isize::MIN);
    check(u128::MAX);
    check(i128::MIN);
}
