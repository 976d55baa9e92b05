use super::*;
use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use serde::ser::{SerializeStruct, Serializer};

#[test]
fn order_of_values_matters_but_map_order_does_not() {
    let mut a = FingerprintBuilder::new();
    a.add(&1).add(&2);
    let mut b = FingerprintBuilder::new();
    b.add(&2).add(&1);
    assert_ne!(a.finish(), b.finish());
}

#[test]
fn non_finite_floats_differ_from_none_and_each_other() {
    let none = of(&None::<f64>).unwrap();
    let nan = of(&f64::NAN).unwrap();
    let inf = of(&f64::INFINITY).unwrap();
    let ninf = of(&f64::NEG_INFINITY).unwrap();
    for (a, b) in [
        (nan, none),
        (inf, none),
        (ninf, none),
        (inf, ninf),
        (nan, inf),
    ] {
        assert_ne!(a, b);
    }
    // One NaN, and -0.0 is 0.0; f32 agrees with f64 on the same value.
    assert_eq!(of(&f64::from_bits(f64::NAN.to_bits() ^ 0x5)), Ok(nan));
    assert_eq!(of(&-f64::NAN), Ok(nan));
    assert_eq!(of(&-0.0f64), of(&0.0f64));
    assert_eq!(of(&1.5f32), of(&1.5f64));
    assert_ne!(of(&1.0f64), of(&1u8), "a float is not an integer");
}

#[test]
fn wide_integers_and_non_string_keys_encode() {
    assert!(of(&u128::MAX).is_ok());
    assert!(of(&i128::MIN).is_ok());
    assert_ne!(of(&u128::MAX), of(&(u128::MAX - 1)));
    assert_ne!(of(&i128::MIN), of(&(i128::MIN + 1)));
    // Integers hash by value, whatever their width.
    assert_eq!(of(&7u8), of(&7i128));
    assert_eq!(of(&-7i8), of(&-7i64));
    let m: HashMap<u32, &str> = [(1, "a"), (2, "b")].into();
    assert!(of(&m).is_ok());
    let s: HashMap<String, &str> = [("1".into(), "a"), ("2".into(), "b")].into();
    assert_ne!(of(&m), of(&s), "integer keys are not their decimal text");
}

#[test]
fn nested_options_differ() {
    assert_ne!(of(&None::<Option<u8>>), of(&Some(None::<u8>)));
    assert_ne!(of(&Some(None::<u8>)), of(&Some(Some(None::<u8>))));
    assert_eq!(of(&Some(5u8)), of(&5u8), "a present option is its value");
    assert_eq!(of(&None::<u8>), of(&serde_json::Value::Null));
}

#[derive(serde::Serialize)]
enum Cmd {
    Stop,
    Move(i32),
    Jump(i32, i32),
    Pay { amount: u64, note: Option<String> },
}

#[test]
fn enums_agree_with_their_json_form() {
    for c in [
        Cmd::Stop,
        Cmd::Move(-3),
        Cmd::Jump(1, 2),
        Cmd::Pay {
            amount: 9,
            note: Some("x".into()),
        },
        Cmd::Pay {
            amount: 9,
            note: None,
        },
    ] {
        assert_eq!(of(&c), of(&serde_json::to_value(&c).unwrap()));
    }
    assert_ne!(of(&Cmd::Move(1)), of(&Cmd::Jump(1, 0)));
}

/// What `serde_json::Number` emits with `arbitrary_precision` turned on.
struct ArbitraryNumber(&'static str);
impl serde::Serialize for ArbitraryNumber {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("$serde_json::private::Number", 1)?;
        st.serialize_field("$serde_json::private::Number", self.0)?;
        st.end()
    }
}

#[test]
fn arbitrary_precision_numbers_hash_as_numbers() {
    assert_eq!(of(&ArbitraryNumber("42")), of(&42u64));
    assert_eq!(of(&ArbitraryNumber("-42")), of(&-42i64));
    assert_eq!(of(&ArbitraryNumber("1.5")), of(&1.5f64));
    assert_eq!(
        of(&ArbitraryNumber("340282366920938463463374607431768211455")),
        of(&u128::MAX)
    );
}

struct Failing;
impl serde::Serialize for Failing {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("no can do"))
    }
}

#[test]
fn a_failing_serialize_is_an_error() {
    assert_eq!(of(&Failing), Err("no can do".to_owned()));
    let mut b = FingerprintBuilder::new();
    b.add(&Failing).add(&1u8);
    assert_eq!(b.finish(), Err("no can do".to_owned()));
    assert_eq!(of(&vec![Some(Failing)]), Err("no can do".to_owned()));
}

#[derive(Debug, Clone, serde::Serialize)]
struct Payload {
    id: u64,
    name: String,
    price: Option<f64>,
    tags: Vec<i32>,
    extra: BTreeMap<String, bool>,
}

fn payload() -> impl Strategy<Value = Payload> {
    (
        any::<u64>(),
        "\\PC{0,8}",
        proptest::option::of(-1e9f64..1e9),
        proptest::collection::vec(any::<i32>(), 0..4),
        proptest::collection::btree_map("[a-c]{1,2}", any::<bool>(), 0..3),
    )
        .prop_map(|(id, name, price, tags, extra)| Payload {
            id,
            name,
            price,
            tags,
            extra,
        })
}

/// Values whose equality is exact (no floats): distinct values must hash apart.
type Tree = Vec<(
    Option<Option<i128>>,
    String,
    Vec<u8>,
    BTreeMap<u8, Option<bool>>,
)>;

fn tree() -> impl Strategy<Value = Tree> {
    proptest::collection::vec(
        (
            proptest::option::of(proptest::option::of(prop_oneof![any::<i128>(), -3i128..3])),
            "[ab]{0,2}",
            proptest::collection::vec(0u8..3, 0..3),
            proptest::collection::btree_map(0u8..4, proptest::option::of(any::<bool>()), 0..3),
        ),
        0..3,
    )
}

proptest::proptest! {
    #[test]
    fn independent_of_map_order(entries in proptest::collection::vec(("[a-z]{1,6}", 0i64..1000), 0..20)) {
        let h: HashMap<String, i64> = entries.iter().cloned().collect();
        let b: BTreeMap<String, i64> = entries.iter().cloned().collect();
        let mut rev: Vec<_> = b.iter().map(|(k, v)| (k.clone(), *v)).collect();
        rev.reverse();
        let obj = serde_json::Value::Object(rev.into_iter().map(|(k, v)| (k, v.into())).collect());
        prop_assert_eq!(of(&h), of(&b));
        prop_assert_eq!(of(&h), of(&obj));
    }

    #[test]
    fn non_string_keys_independent_of_map_order(
        entries in proptest::collection::vec(((any::<u8>(), "[a-z]{0,3}"), any::<i64>()), 0..20),
    ) {
        let h: HashMap<(u8, String), i64> = entries.iter().cloned().collect();
        let b: BTreeMap<(u8, String), i64> = entries.iter().cloned().collect();
        prop_assert!(of(&h).is_ok());
        prop_assert_eq!(of(&h), of(&b));
    }

    #[test]
    fn a_struct_and_its_json_value_agree(p in payload()) {
        let v = serde_json::to_value(&p).unwrap();
        prop_assert_eq!(of(&p), of(&v));
    }

    #[test]
    fn distinct_values_hash_apart(a in tree(), b in tree()) {
        prop_assert_eq!(a == b, of(&a) == of(&b));
    }

    #[test]
    fn floats_hash_equal_exactly_when_equal(a in any::<f64>(), b in any::<f64>()) {
        let same = a == b || (a.is_nan() && b.is_nan());
        prop_assert_eq!(same, of(&a) == of(&b));
    }
}

/// `of_record` is `of` for the same struct, whatever the field order, the
/// name lengths (a name of 256 bytes or more sorts by its length's bytes)
/// and the value sizes (past the gathering buffer).
#[test]
fn a_record_hashed_as_encoded_is_the_struct_fingerprint() {
    struct Raw<'a>(&'a [u8]);
    impl Serialize for Raw<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    #[derive(Serialize)]
    struct Payload<'a> {
        method: Option<&'a str>,
        path: Option<&'a str>,
        body: Option<Raw<'a>>,
    }
    let long = "x".repeat(300);
    let big = vec![7u8; 5000];
    let bodies: [Option<&[u8]>; 4] = [None, Some(b""), Some(b"{\"sku\":\"A\"}"), Some(&big)];
    for method in [None, Some("POST")] {
        for path in [None, Some("/orders?x=1"), Some(long.as_str())] {
            for body in bodies {
                let want = of(&Payload {
                    method,
                    path,
                    body: body.map(Raw),
                })
                .unwrap();
                let mut fields = [
                    ("path", path.map_or(Field::None, Field::Str)),
                    ("method", method.map_or(Field::None, Field::Str)),
                    ("body", body.map_or(Field::None, Field::Bytes)),
                ];
                assert_eq!(of_record(&mut fields), want, "{method:?} {path:?}");
            }
        }
    }
    // Names of other lengths, one of 256 bytes (length bytes 0, 1, ...).
    let name256 = "n".repeat(256);
    let mut map = BTreeMap::new();
    map.insert("zz", "a");
    map.insert("b", "c");
    map.insert(name256.as_str(), "d");
    let mut fields = [
        (name256.as_str(), Field::Str("d")),
        ("zz", Field::Str("a")),
        ("b", Field::Str("c")),
    ];
    assert_eq!(of_record(&mut fields), of(&map).unwrap());
}
