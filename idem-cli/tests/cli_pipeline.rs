//! `idem outbox` and `idem consume` on PostgreSQL (a fresh schema), MariaDB
//! (a fresh database) and SQLite (a fresh file): messages enqueued by the
//! library in business transactions, rows consumed by `consume_once`, and
//! the states a relay leaves (sent, parked, waiting for a retry) written the
//! way the relay writes them.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idem::consume::{Message, consume_once};
use idem::store::sql::SqlStore;
use support::pipeline::{Db, Fresh, cleaned_up, fresh_mariadb, fresh_postgres, fresh_sqlite};
use support::{handle, id, idem};

/// One consumed message in its own transaction, under `h`'s namespace.
async fn consume(db: &Db, h: &idem::Idem, consumer: &str, msg: &str, biz: Option<(&str, &str)>) {
    let business = biz
        .as_ref()
        .map(|(ty, id)| (*ty, id as &(dyn idem::KeyPart + Sync)));
    macro_rules! tx {
        ($begin:expr) => {{
            let mut tx = $begin.await.unwrap();
            let m = Message {
                consumer,
                id: &msg,
                business,
            };
            let done = consume_once(&mut tx, m)
                .handle(h)
                .run(async |_c| Ok::<_, idem::Error>(()))
                .await
                .unwrap();
            assert!(!done.is_duplicate(), "{consumer}/{msg} is new");
            tx.commit().await.unwrap();
        }};
    }
    match db {
        Db::Pg(p, _) => tx!(p.begin()),
        Db::My(p) => tx!(p.begin()),
        Db::Lite(p) => tx!(p.begin_with("BEGIN IMMEDIATE")),
    }
}

fn topic<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == name)
        .unwrap_or_else(|| panic!("topic {name} listed: {v}"))
}

/// The story every SQL store tells; `args` name the store (and schema).
async fn story(db: &Db, store: SqlStore, args: &[&str]) {
    let run = |extra: &[&str]| idem(&[extra, args].concat());
    let empty = run(&["outbox", "--json"]);
    assert_eq!(empty.code, 0, "{}{}", empty.out, empty.err);
    assert_eq!(empty.json()["topics"], serde_json::json!([]));

    // Topic `created`: a-1, then (a second later) a-2 and a-3; `refund`: r-1, r-2.
    let (created, refund) = (format!("t{}.created", id()), format!("t{}.refund", id()));
    let a1 = db.enqueue("idem_outbox", &created, "a-1").await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    db.enqueue("idem_outbox", &created, "a-2").await;
    let a3 = db.enqueue("idem_outbox", &created, "a-3").await;
    let r1 = db.enqueue("idem_outbox", &refund, "r-1").await;
    let r2 = db.enqueue("idem_outbox", &refund, "r-2").await;
    // As a relay leaves them: a-1 refused once and waiting an hour for its
    // retry, a-3 sent, both refunds parked after 8 attempts.
    db.exec(&format!(
        "UPDATE idem_outbox SET attempts = 1, due_at = {}, last_error = 'refused' WHERE id = '{a1}'",
        db.in_an_hour()
    ))
    .await;
    db.exec(&format!(
        "UPDATE idem_outbox SET state = 1, sent_at = due_at, expires_at = due_at WHERE id = '{a3}'"
    ))
    .await;
    // (A relay's park leaves the claim's due time; the owner is set here
    // too, so the retry below must clear both.)
    db.exec(&format!(
        "UPDATE idem_outbox SET state = 2, attempts = 8, last_error = 'returned by the broker: NO_ROUTE', \
         due_at = {}, owner = {} WHERE topic = '{refund}'",
        db.in_an_hour(),
        db.an_owner()
    ))
    .await;

    let v = run(&["outbox", "--json"]).json();
    assert_eq!(v["table"], "idem_outbox");
    let c = topic(&v, &created);
    assert_eq!(
        (
            c["pending"].as_u64(),
            c["parked"].as_u64(),
            c["sent"].as_u64()
        ),
        (Some(2), Some(0), Some(1)),
        "{v}"
    );
    let (oldest, lag) = (c["oldest_pending_ms"].as_u64(), c["lag_ms"].as_u64());
    let (oldest, lag) = (oldest.expect("a pending message"), lag.expect("a due one"));
    // The oldest pending message (a-1) waits for its retry: the lag is a-2's
    // age, a second younger.
    assert!(oldest >= 1_000 && oldest - lag >= 1_000, "{c}");
    let r = topic(&v, &refund);
    assert_eq!(
        (
            r["pending"].as_u64(),
            r["parked"].as_u64(),
            r["sent"].as_u64()
        ),
        (Some(0), Some(2), Some(0)),
        "{v}"
    );
    assert!(
        r["oldest_pending_ms"].is_null() && r["lag_ms"].is_null(),
        "{r}"
    );
    assert_eq!(
        (
            v["totals"]["pending"].as_u64(),
            v["totals"]["parked"].as_u64()
        ),
        (Some(2), Some(2))
    );
    let human = run(&["outbox"]);
    assert_eq!(human.code, 0, "{}", human.err);
    let line = |name: &str| {
        let l = human.out.lines().find(|l| l.starts_with(name));
        l.unwrap_or_else(|| panic!("a line for {name}: {}", human.out))
            .split_whitespace()
            .take(4)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line(&created), format!("{created} 2 0 1"));
    assert_eq!(line(&refund), format!("{refund} 0 2 0"));
    assert_eq!(line("total"), "total 2 2 1");

    // The parked messages, oldest first.
    let parked = run(&["outbox", "--parked", "--json"]).json();
    let list = parked["parked"].as_array().unwrap();
    let ids: Vec<&str> = list.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [r1.as_str(), r2.as_str()], "{parked}");
    assert_eq!(list[0]["business_id"], "r-1");
    assert_eq!(list[0]["topic"], refund.as_str());
    assert_eq!(list[0]["attempts"], 8);
    assert_eq!(list[0]["last_error"], "returned by the broker: NO_ROUTE");
    assert!(
        list[0]["created_at"].as_str().unwrap().ends_with('Z'),
        "{parked}"
    );
    let one = run(&["outbox", "--parked", "--limit", "1", "--json"]).json();
    assert_eq!(one["parked"].as_array().unwrap().len(), 1);
    assert_eq!(one["more"], true);
    let human = run(&["outbox", "--parked"]);
    assert!(
        human.out.contains(&r2) && human.out.contains("NO_ROUTE"),
        "{}",
        human.out
    );

    // Retry: unknown and not parked are "no" (1), a parked one is unparked.
    let unknown = run(&["outbox", "retry", "obx-nope", "--json"]);
    assert_eq!(unknown.code, 1, "{}{}", unknown.out, unknown.err);
    assert_eq!(unknown.json()["outcome"], "not_found");
    let pending = run(&["outbox", "retry", &a1]);
    assert_eq!(pending.code, 1, "{}{}", pending.out, pending.err);
    assert!(pending.out.contains("pending"), "{}", pending.out);
    let done = run(&["outbox", "retry", &r1, "--json"]);
    assert_eq!(done.code, 0, "{}{}", done.out, done.err);
    assert_eq!(done.json()["outcome"], "unparked");
    let row = db
        .text(&format!(
            "SELECT {} FROM idem_outbox WHERE id = '{r1}'",
            db.row_summary()
        ))
        .await;
    assert_eq!(row, "0/0/none/due", "state/attempts/owner/due of {r1}");
    let again = run(&["outbox", "retry", &r1, "--json"]);
    assert_eq!(again.code, 1, "a repeat finds it pending: {}", again.out);
    assert_eq!(
        (
            again.json()["outcome"].as_str(),
            again.json()["state"].as_str()
        ),
        (Some("not_parked"), Some("pending"))
    );
    let v = run(&["outbox", "--json"]).json();
    let r = topic(&v, &refund);
    assert_eq!(
        (r["pending"].as_u64(), r["parked"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(r["lag_ms"].is_u64(), "the unparked message is due: {r}");

    // Another outbox table, and one that does not exist (exit 4, named).
    let other = format!("cli_outbox_{}", id());
    let names = idem::store::sql::TableNames::default()
        .outbox(&other)
        .unwrap();
    let names = match db {
        Db::Pg(_, schema) => names.schema(schema).unwrap(),
        _ => names,
    };
    store.with_tables(names).migrate().await.unwrap();
    db.enqueue(&other, "elsewhere", "e-1").await;
    let v = run(&["outbox", "--table", &other, "--json"]).json();
    assert_eq!(v["topics"][0]["topic"], "elsewhere", "{v}");
    assert_eq!(v["topics"].as_array().unwrap().len(), 1, "{v}");
    // The same topic and business id under another namespace: its own row,
    // shown apart, and alone with `-n`.
    db.enqueue_in(&other, "billing", "elsewhere", "e-1").await;
    let v = run(&["outbox", "--table", &other, "--json"]).json();
    assert_eq!(v["totals"]["pending"], 2, "{v}");
    assert_eq!(v["topics"][1]["namespace"], "billing", "{v}");
    let v = run(&["outbox", "--table", &other, "-n", "billing", "--json"]).json();
    assert_eq!(v["topics"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["topics"][0]["namespace"], "billing", "{v}");
    let text = run(&["outbox", "--table", &other]);
    assert!(text.out.contains("billing/elsewhere"), "{}", text.out);
    let missing = run(&["outbox", "--table", "no_such_outbox"]);
    assert_eq!(missing.code, 4, "{}{}", missing.out, missing.err);
    assert!(missing.err.contains("no_such_outbox"), "{}", missing.err);
}

/// `idem consume` counts the log per consumer and message type under `-n`.
async fn consume_story(db: &Db, store: SqlStore, args: &[&str]) {
    let store: Arc<dyn idem::Store> = Arc::new(store);
    let ns = format!("cli{}", id());
    let h = handle(Arc::clone(&store), &ns);
    let other = handle(store, &format!("other{}", id()));
    let long = "x".repeat(300);
    consume(db, &h, "billing", "m-1", Some(("order", "o-1"))).await;
    consume(db, &h, "billing", "m-2", Some(("order", "o-2"))).await;
    consume(db, &h, "billing", "m-3", None).await;
    consume(db, &h, "mailer", "m-4", Some(("order", &long))).await;
    consume(db, &other, "billing", "m-5", Some(("order", "o-1"))).await;
    let run = |extra: &[&str]| idem(&[extra, args, &["-n", &ns]].concat());
    let v = run(&["consume", "--json"]).json();
    assert_eq!(v["namespace"], ns.as_str());
    let got: Vec<(String, serde_json::Value, u64)> = v["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["consumer"].as_str().unwrap().to_owned();
            (name, c["msg_type"].clone(), c["rows"].as_u64().unwrap())
        })
        .collect();
    let null = serde_json::Value::Null;
    assert_eq!(
        got,
        [
            ("billing".into(), null.clone(), 1),
            ("billing".into(), "order".into(), 2),
            ("mailer".into(), null, 1),
        ],
        "{v}"
    );
    let billing = &v["consumers"][1];
    assert!(
        billing["oldest_ms"].as_u64() >= billing["newest_ms"].as_u64(),
        "{v}"
    );
    assert_eq!(billing["expired"], 0);
    assert_eq!(v["totals"]["rows"], 4);
    let human = run(&["consume"]);
    assert_eq!(human.code, 0, "{}", human.err);
    let words = |l: &str| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = human.out.lines().map(words).collect();
    assert!(
        lines.contains(&"billing order 2".to_owned()),
        "{}",
        human.out
    );
    assert!(lines.contains(&"mailer - 1".to_owned()), "{}", human.out);
    let none = idem(&[&["consume", "--json", "-n", "nobody-here"], args].concat()).json();
    assert_eq!(none["consumers"], serde_json::json!([]));
}

/// Both stories on `f`, then its cleanup.
async fn both(f: Fresh) {
    cleaned_up(f, async |f| {
        let mut args = vec!["--store", f.url.as_str()];
        if let Db::Pg(_, schema) = &f.db {
            args.extend(["--schema", schema.as_str()]);
        }
        story(&f.db, f.store.clone(), &args).await;
        consume_story(&f.db, f.store.clone(), &args).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outbox_and_consume() {
    both(fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_outbox_and_consume() {
    both(fresh_mariadb().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_outbox_and_consume() {
    both(fresh_sqlite().await).await;
}

#[test]
fn usage_unreachable_and_redacted_passwords() {
    for cmd in ["outbox", "consume"] {
        let r = idem(&["--store", "redis://127.0.0.1:6379", cmd]);
        assert_eq!(r.code, 2, "{cmd}: {}{}", r.out, r.err);
        assert!(r.err.contains("SQL"), "{}", r.err);
        let none = idem(&[cmd]);
        assert_eq!(none.code, 2, "no store: {}", none.err);
        assert!(none.err.contains("DATABASE_URL"), "{}", none.err);
        let url = "postgres://postgres:hunter22@127.0.0.1:1/test";
        let down = idem(&["--store", url, "--timeout", "5", cmd]);
        assert_eq!(down.code, 3, "{cmd}: {}{}", down.out, down.err);
        assert!(
            !down.err.contains("hunter22") && down.err.contains("***"),
            "{}",
            down.err
        );
    }
    let both = idem(&[
        "--store",
        "sqlite:x.db",
        "outbox",
        "--parked",
        "retry",
        "obx-1",
    ]);
    assert_eq!(both.code, 2, "{}{}", both.out, both.err);
}

/// Without --store the messaging commands read `DATABASE_URL`, even with a
/// `REDIS_URL` set (the records' store of the other commands).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_url_is_the_default() {
    cleaned_up(fresh_sqlite().await, async |f| {
        f.db.enqueue("idem_outbox", "from-env", "e-1").await;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(["outbox", "--json"])
            .env("REDIS_URL", "redis://127.0.0.1:6379")
            .env("DATABASE_URL", &f.url)
            .env_remove("IDEM_NAMESPACE")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains("from-env"), "{text}");
    })
    .await;
}
