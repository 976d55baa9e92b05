//! The scene rule, end to end: distinct (function, argument tuple) pairs on one
//! handle never share a record, unless the later function was refused with
//! `SceneConflict`; and refusals happen only where scenes overlap.

use proptest::prelude::*;

use super::*;
use crate::__private::{Guarded, KeyBuf, Spec};
use crate::handle::Idem;
use crate::key::KeyPart;
use crate::store::memory::MemoryStore;

type Arg = Option<Option<String>>;

/// A template in the macro's grammar: a literal scene (segments, then one or
/// two `:`), placeholders separated by literal text ending in `:`, and an
/// optional trailing literal.
#[derive(Debug, Clone)]
struct Template {
    scene: Vec<&'static str>,
    colons: usize,
    /// Literal text after each placeholder but the last ends in `:`.
    between: Vec<&'static str>,
    trailing: &'static str,
}

impl Template {
    fn params(&self) -> usize {
        self.between.len() + 1
    }
    fn head(&self) -> String {
        format!("{}{}", self.scene.join(":"), ":".repeat(self.colons))
    }
    fn text(&self) -> String {
        let mut t = self.head();
        for (i, lit) in self.between.iter().enumerate() {
            t.push_str(&format!("<p{i}>{lit}"));
        }
        t.push_str(&format!("<p{}>{}", self.between.len(), self.trailing));
        t
    }
}

fn template() -> impl Strategy<Value = Template> {
    let seg = prop::sample::select(vec!["a", "b", "ab", "a.b", "#", "~x"]);
    let between = prop::sample::select(vec![":", "x:", "-v:", "y:z:", "#:"]);
    let trailing = prop::sample::select(vec!["", ":v2", "-x", "#"]);
    (
        prop::collection::vec(seg, 1..4),
        1usize..3,
        prop::collection::vec(between, 0..3),
        trailing,
    )
        .prop_map(|(scene, colons, between, trailing)| Template {
            scene,
            colons,
            between,
            trailing,
        })
}

fn arg() -> impl Strategy<Value = Arg> {
    let text = prop_oneof![
        3 => "[ab:#%+~-]{0,3}",
        2 => prop::sample::select(vec!["a", "b", "ab", "x", "v2"]).prop_map(String::from),
        1 => (1usize..3).prop_map(|n| "ab:".repeat(70 * n)),
    ];
    prop_oneof![
        6 => text.prop_map(|t| Some(Some(t))),
        1 => Just(Some(None)),
        1 => Just(None),
    ]
}

#[derive(Debug, Clone)]
enum Call {
    /// Function index and one value per placeholder (extra values unused).
    Macro(usize, Vec<Arg>),
    /// `Idem::guard(scene, parts)`.
    Plain(&'static str, Vec<Arg>),
}

fn call(functions: usize) -> impl Strategy<Value = Call> {
    let args = prop::collection::vec(arg(), 0..4);
    let plain_scene = prop::sample::select(vec!["a", "b", "a:b", "ab", "#", "a%3Ab"]);
    prop_oneof![
        3 => (0..functions, prop::collection::vec(arg(), 4)).prop_map(|(f, a)| Call::Macro(f, a)),
        2 => (plain_scene, args).prop_map(|(s, a)| Call::Plain(s, a)),
    ]
}

fn parts(args: &[Arg]) -> Vec<&(dyn KeyPart + Sync)> {
    args.iter().map(|a| a as &(dyn KeyPart + Sync)).collect()
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Renders and runs one call through the entry points the macro expansion and
/// the non-macro API use; the body returns the call's identity.
async fn run(
    idem: &Idem,
    specs: &[(&'static Spec, Template)],
    call: &Call,
) -> (String, Result<String, Error>) {
    match call {
        Call::Macro(f, args) => {
            let (spec, t) = &specs[*f];
            let args = &args[..t.params()];
            let identity = format!("macro {f} {args:?}");
            let mut key = KeyBuf::new(spec).lit(leak(t.head()));
            for (i, a) in args.iter().enumerate() {
                key = key.arg(a);
                key = key.lit(t.between.get(i).copied().unwrap_or(t.trailing));
            }
            let body_identity = identity.clone();
            let r = Guarded::<Result<String, Error>>::new(spec, key.finish())
                .handle(idem)
                .run(async move { Ok(body_identity) })
                .await;
            (identity, r)
        }
        Call::Plain(scene, args) => {
            let identity = format!("plain {scene:?} {args:?}");
            let body_identity = identity.clone();
            let r = idem
                .guard(scene, &parts(args))
                .run(|| async move { Ok::<_, Error>(body_identity) })
                .await
                .map(crate::outcome::Outcome::into_inner);
            (identity, r)
        }
    }
}

/// The scene a call registers, as it appears in keys, and its owner's index
/// (`usize::MAX` for the non-macro API).
fn scene_of(idem: &Idem, specs: &[(&'static Spec, Template)], call: &Call) -> (String, usize) {
    match call {
        Call::Macro(f, _) => (specs[*f].0.scene.to_owned(), *f),
        Call::Plain(scene, _) => (idem.key(scene, &[]).scene().to_owned(), usize::MAX),
    }
}

fn segment_overlap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<_>, Vec<_>) = (a.split(':').collect(), b.split(':').collect());
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]
    #[test]
    fn distinct_calls_never_share_a_record(
        templates in prop::collection::vec(template(), 1..5),
        names in prop::collection::vec(0usize..2, 4),
        calls in prop::collection::vec(call(4), 1..14),
        namespace in prop::sample::select(vec!["", "ns"]),
    ) {
        let specs: Vec<(&'static Spec, Template)> = templates
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let spec: &'static Spec = Box::leak(Box::new(Spec {
                    // Same-named functions: identity must come from the address.
                    function: ["m::f", "m::g"][names[i]],
                    template: leak(t.text()),
                    scene: leak(t.scene.join(":")),
                    ..Spec::DEFAULT
                }));
                (spec, t.clone())
            })
            .collect();
        let calls: Vec<Call> = calls
            .into_iter()
            .map(|c| match c {
                Call::Macro(f, a) => Call::Macro(f % specs.len(), a),
                plain => plain,
            })
            .collect();
        let idem = Idem::builder()
            .store(MemoryStore::new())
            .namespace(namespace)
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        // The test's own model of the registry: first owner per scene.
        let mut registered: Vec<(String, usize)> = Vec::new();
        for c in &calls {
            let (identity, r) = rt.block_on(run(&idem, &specs, c));
            let (scene, owner) = scene_of(&idem, &specs, c);
            let clash = registered
                .iter()
                .find(|(s, o)| *o != owner && segment_overlap(s, &scene))
                .cloned();
            match (r, clash) {
                (Ok(v), None) => {
                    prop_assert_eq!(&v, &identity, "{:?} got another call's record", c);
                    if !registered.iter().any(|(s, o)| *s == scene && *o == owner) {
                        registered.push((scene, owner));
                    }
                }
                (Err(Error::SceneConflict { .. }), Some(_)) => {}
                (r, clash) => prop_assert!(false, "{:?}: {:?}, overlapping {:?}", c, r, clash),
            }
        }
    }
}

/// The per-thread memo of the last non-macro scene belongs to one handle: a
/// scene a macro function owns on another handle still refuses `guard`, and
/// on the same handle a macro function arriving after a memoised `guard`
/// still conflicts.
#[test]
fn last_plain_scene_memo_is_per_handle() {
    static SPEC: Spec = Spec {
        function: "m::owner",
        template: "s:<p0>",
        scene: "s",
        ..Spec::DEFAULT
    };
    let build = || Idem::builder().store(MemoryStore::new()).build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let macro_call = |idem: &Idem| {
        let key = KeyBuf::new(&SPEC).lit("s:").arg(&"1").finish();
        rt.block_on(
            Guarded::<Result<u8, Error>>::new(&SPEC, key)
                .handle(idem)
                .run(async { Ok(1) }),
        )
    };
    let plain_call = |idem: &Idem| {
        rt.block_on(
            idem.guard("s", &[&"1"])
                .run(|| async { Ok::<_, Error>(2u8) }),
        )
        .map(crate::outcome::Outcome::into_inner)
    };
    let (a, b) = (build(), build());
    assert_eq!(plain_call(&a).unwrap(), 2);
    assert_eq!(macro_call(&b).unwrap(), 1);
    assert!(
        matches!(plain_call(&b), Err(Error::SceneConflict { .. })),
        "handle a's memo let guard into a scene b's macro function owns"
    );
    assert_eq!(plain_call(&a).unwrap(), 2, "memo hit on a: replay");
    assert!(matches!(macro_call(&a), Err(Error::SceneConflict { .. })));
    // The macro memo is per handle too: b's registration of the function
    // (the memo) must not let it into a's plain scene.
    assert_eq!(macro_call(&b).unwrap(), 1, "memo hit on b: replay");
    assert!(
        matches!(macro_call(&a), Err(Error::SceneConflict { .. })),
        "handle b's memo let the macro function into a scene a's guard owns"
    );
}
