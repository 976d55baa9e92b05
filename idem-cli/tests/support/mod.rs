//! What the `idem` command's tests share: running the real binary, a random
//! id per test, and a claim left behind by a body whose future was dropped
//! (what a killed process leaves: the lease runs, nobody renews or releases).

#![allow(dead_code)] // each test binary uses part of it

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The command's exit code, stdout and stderr.
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) out: String,
    pub(crate) err: String,
}

impl Ran {
    /// Stdout as the JSON object `--json` promises.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.out)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.out, self.err))
    }
}

/// Runs `idem ARGS` with no store variables inherited.
pub(crate) fn idem(args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(args)
        .env_remove("REDIS_URL")
        .env_remove("DATABASE_URL")
        .env_remove("IDEM_NAMESPACE")
        .output()
        .expect("run idem");
    Ran {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A short random id: namespaces, schemas, databases, prefixes.
pub(crate) fn id() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("{:x}{:x}", n % 0xffff_ffff, std::process::id())
}

/// A handle on `store` under `ns`.
pub(crate) fn handle(store: Arc<dyn idem::Store>, ns: &str) -> idem::Idem {
    idem::Idem::builder()
        .shared_store(store)
        .namespace(ns)
        .build()
        .expect("handle")
}

/// Starts `scene/part`'s body and drops its future once the body runs: the
/// claim stays, live for `lease`, as a killed process leaves it.
pub(crate) async fn crashed_claim(idem: &idem::Idem, scene: &str, part: &str) {
    let (started, mut running) = tokio::sync::mpsc::channel::<()>(1);
    let idem2 = idem.clone();
    let (scene, part) = (scene.to_owned(), part.to_owned());
    let task = tokio::spawn(async move {
        idem2
            .guard(&scene, &[&part])
            .lease(Duration::from_secs(60))
            .run(|| async move {
                let _ = started.send(()).await;
                tokio::time::sleep(Duration::from_secs(3_600)).await;
                Ok::<_, idem::Error>(0u32)
            })
            .await
    });
    running.recv().await.expect("the body started");
    task.abort();
    let _ = task.await;
}

/// One guarded call of `scene/part` returning `value`; true when its body ran.
pub(crate) async fn call(
    idem: &idem::Idem,
    scene: &str,
    part: &str,
    ttl: Duration,
    value: u32,
) -> bool {
    let out = idem
        .guard(scene, &[&part])
        .ttl(ttl)
        .lease((ttl / 2).min(Duration::from_secs(30)))
        .run(|| async move { Ok::<_, idem::Error>(value) })
        .await
        .expect("guarded call");
    out.how() == idem::How::Executed
}

/// The crashed-claim story every store must tell: a process (`dead`, a
/// handle on a store of its own, dropped like a killed process's memory)
/// leaves a claim; `inspect` finds it, `forget` refuses it without `--force`
/// and removes it with it, and the next call (on `h`) runs its body.
pub(crate) async fn crashed_claim_story(dead: idem::Idem, h: &idem::Idem, store_args: &[&str]) {
    let ns = h.namespace().to_owned();
    assert_eq!(dead.namespace(), ns);
    crashed_claim(&dead, "order-create", "42").await;
    drop(dead);
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = extra.to_vec();
        a.extend_from_slice(store_args);
        a.extend_from_slice(&["-n", &ns, "--scene", "order-create", "-p", "42"]);
        idem(&a)
    };
    let found = with(&["inspect", "--json"]);
    assert_eq!(found.code, 0, "{}{}", found.out, found.err);
    let v = found.json();
    assert_eq!(v["state"], "in_progress", "{v}");
    assert_eq!(v["key"], format!("{ns}:order-create:42"));
    let human = with(&["inspect"]);
    assert!(
        human.out.contains("state        in progress"),
        "{}",
        human.out
    );
    // The claim's process (this test's) is named, and `ls` finds the key.
    assert_eq!(v["holder"]["pid"], std::process::id(), "{v}");
    assert_eq!(v["holder"]["this_host"], true, "{v}");
    let listed = idem(&[&["ls", "--json", "-n", &ns], store_args].concat());
    assert_eq!(listed.code, 0, "{}{}", listed.out, listed.err);
    let l = listed.json();
    assert_eq!(l["count"], 1, "{l}");
    assert_eq!(l["records"][0]["key"], format!("{ns}:order-create:42"));
    assert_eq!(l["records"][0]["state"], "in_progress");
    let other = idem(&[&["ls", "--json", "-n", &ns, "--scene", "pay"], store_args].concat());
    assert_eq!(other.json()["count"], 0, "{}", other.out);
    // `inspect` takes the hash the logs show.
    let hash = v["hash"].as_str().unwrap().to_owned();
    let by_hash = idem(&[&["inspect", "--json", "-n", &ns, &hash], store_args].concat());
    assert_eq!(by_hash.code, 0, "{}{}", by_hash.out, by_hash.err);
    assert_eq!(by_hash.json()["key"], v["key"]);
    let unknown = idem(&[&["inspect", "-n", &ns, "#0000000000000000"], store_args].concat());
    assert_eq!(unknown.code, 1, "{}{}", unknown.out, unknown.err);
    let refused = with(&["forget"]);
    assert_eq!(refused.code, 1, "{}{}", refused.out, refused.err);
    assert!(refused.out.contains("refused"), "{}", refused.out);
    let forced = with(&["forget", "--force", "--json"]);
    assert_eq!(forced.code, 0, "{}{}", forced.out, forced.err);
    assert_eq!(forced.json()["removed"], true);
    let gone = with(&["inspect"]);
    assert_eq!(gone.code, 1, "no record any more: {}", gone.out);
    assert!(call(h, "order-create", "42", Duration::from_secs(60), 7).await);
    let done = with(&["inspect", "--json"]).json();
    assert_eq!(
        (done["state"].as_str(), done["result"].as_u64()),
        (Some("done"), Some(7))
    );
}

/// `Store::forget_if` deletes only the record it was shown: after the key
/// was released and claimed anew, the old view deletes nothing; the current
/// one (in progress, then done) deletes it.
pub(crate) async fn forget_if_story(store: &dyn idem::Store, key: &str) {
    use idem::store::{Claim, ClaimRequest, Owner};
    let req = |owner| ClaimRequest {
        key,
        owner,
        fingerprint: idem::fingerprint::Fingerprint([3; 16]),
        lease: Duration::from_secs(60),
    };
    let (a, b) = (Owner::fresh(), Owner::fresh());
    assert!(matches!(
        store.claim(req(a)).await.unwrap(),
        Claim::Claimed { .. }
    ));
    let old = store.inspect(key).await.unwrap().expect("a's claim");
    store.release(key, a).await.unwrap();
    assert!(matches!(
        store.claim(req(b)).await.unwrap(),
        Claim::Claimed { .. }
    ));
    assert!(
        !store.forget_if(key, &old).await.unwrap(),
        "b's claim stays"
    );
    let now = store.inspect(key).await.unwrap().expect("b's claim");
    store
        .complete(key, b, b"I1\0\0\0\0\x001", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        !store.forget_if(key, &now).await.unwrap(),
        "it finished since"
    );
    let done = store.inspect(key).await.unwrap().expect("b's record");
    assert!(store.forget_if(key, &done).await.unwrap());
    assert_eq!(store.inspect(key).await.unwrap(), None);
}

pub(crate) mod pipeline;
