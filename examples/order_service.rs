//! The four acceptance rounds of an order service, through the non-macro
//! `Idem::guard` API, on the database named by `DATABASE_URL`
//! (`postgres://…`, `mysql://…`, or `sqlite://file.db`; default: a SQLite file in
//! the temp directory). The idem records live in the same database (created by
//! `migrate()`), or in Redis when `REDIS_URL` is set (needs the `redis`
//! feature: the layered setup, Redis in front, the database constraint behind);
//! the orders table has a unique index on the order number: the backstop.
//!
//! 1. ten sequential repeats of one request;
//! 2. fifty concurrent callers on one key;
//! 3. a first attempt that fails after its write, then a retry;
//! 4. the record store unavailable (through `FaultyStore`), degraded to the
//!    backstop: exactly one order.
//!
//! ```text
//! cargo run --example order_service --features postgres,mysql          # a SQLite file
//! DATABASE_URL=postgres://postgres@127.0.0.1/test cargo run --example order_service --features postgres,mysql
//! REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL=mysql://root@127.0.0.1/test cargo run --example order_service --features redis,postgres,mysql
//! ```
//! Every run uses its own orders table (dropped at the end) and namespace, so
//! runs on shared servers never meet.
//! Prints one line per round and exits non-zero if any verdict fails.

use std::sync::Arc;

#[path = "order_service/orders.rs"]
mod orders;
mod support;
use orders::{Orders, connect};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::SqlStore;
use idem::{FaultyStore, Hooks, How, Idem, Store};

#[derive(Debug, thiserror::Error)]
enum OrderError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("payment provider timed out")]
    Downstream,
}

/// Creates the order once per request: the guarded business operation.
async fn create_order(
    idem: &Idem,
    orders: &Arc<Orders>,
    order_no: &str,
    bodies: &AtomicUsize,
    fail_after_write: bool,
    degrade: bool,
) -> Result<idem::Outcome<i64>, OrderError> {
    let lookup = Arc::clone(orders);
    let no = order_no.to_owned();
    let mut guard = idem
        .guard("order-create", &[&order_no])
        .ttl(Duration::from_secs(3600))
        .backstop(orders.index.clone());
    if degrade {
        guard = guard.degrade_to_backstop();
    }
    guard
        .run_with(
            Hooks::new()
                .detect(idem::std_error)
                .on_conflict(move || async move { Ok(lookup.find(&no).await?) }),
            || async move {
                bodies.fetch_add(1, Ordering::SeqCst);
                let id = orders.insert(order_no).await?;
                // Give concurrent duplicates time to arrive while we hold the key.
                tokio::time::sleep(Duration::from_millis(100)).await;
                if fail_after_write {
                    return Err(OrderError::Downstream);
                }
                Ok(id)
            },
        )
        .await
}

/// `n` copies of one request released together; returns each caller's outcome
/// and the order id it got, and how many bodies ran.
async fn concurrent_copies(
    idem: &Idem,
    orders: &Arc<Orders>,
    order_no: &'static str,
    n: usize,
    degrade: bool,
) -> Result<(usize, Vec<Result<(How, i64), String>>), Box<dyn std::error::Error>> {
    let bodies = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (idem, orders, bodies, barrier) = (
            idem.clone(),
            orders.clone(),
            bodies.clone(),
            barrier.clone(),
        );
        tasks.spawn(async move {
            barrier.wait().await;
            create_order(&idem, &orders, order_no, &bodies, false, degrade)
                .await
                .map(|o| (o.how(), *o.value()))
                .map_err(|e| e.to_string())
        });
    }
    let mut results = Vec::new();
    while let Some(r) = tasks.join_next().await {
        results.push(r?);
    }
    Ok((bodies.load(Ordering::SeqCst), results))
}

struct Verdict {
    round: &'static str,
    calls: usize,
    bodies: usize,
    rows: i64,
    outcomes: String,
    pass: bool,
}

fn tally<'a>(hows: impl IntoIterator<Item = &'a Result<How, String>>) -> String {
    let mut m = std::collections::BTreeMap::<String, usize>::new();
    for h in hows {
        let k = match h {
            Ok(how) => how.as_str().to_owned(),
            Err(e) => format!("error({e})"),
        };
        *m.entry(k).or_default() += 1;
    }
    m.iter()
        .map(|(k, v)| format!("{k}×{v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Redis when `REDIS_URL` is set, else the SQL store on `DATABASE_URL`.
async fn record_store(url: &str) -> Result<Arc<dyn Store>, Box<dyn std::error::Error>> {
    if let Some(redis_url) = support::var(support::REDIS_URL) {
        #[cfg(feature = "redis")]
        return Ok(Arc::new(idem::RedisStore::connect(&redis_url).await?));
        #[cfg(not(feature = "redis"))]
        return Err(support::needs_feature(
            support::REDIS_URL,
            &redis_url,
            "redis,postgres,mysql",
            "order_service",
        )
        .into());
    }
    let store = SqlStore::connect(url).await?;
    store.migrate().await?; // explicit: idem never creates tables on its own
    Ok(Arc::new(store))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = support::var(support::DATABASE_URL).unwrap_or_else(|| {
        format!(
            "sqlite://{}",
            std::env::temp_dir().join("idem-order-service.db").display()
        )
    });
    let run = uuid::Uuid::new_v4().simple().to_string()[..10].to_owned();

    let store = record_store(&url).await?;
    let orders = Arc::new(Orders::create(connect(&url).await?, &run).await?);
    let faulty = Arc::new(FaultyStore::new(store));
    let idem = Idem::builder()
        .shared_store(faulty.clone())
        .namespace(format!("shop-{run}"))
        .constraints(orders.catalog())
        .op_timeout(Duration::from_secs(5))
        .build()?;
    idem.verify(&[orders.index.as_str()]).await?;
    let records = match support::var(support::REDIS_URL) {
        Some(r) => format!("Redis at {}", support::redact(&r)),
        None => format!("the same database (store `{}`)", idem.store_name()),
    };
    support::print_backends(&[
        (
            "orders",
            format!("{} table `{}`", support::redact(&url), orders.table),
        ),
        ("records", format!("{records}, namespace `shop-{run}`")),
    ]);
    println!();

    let mut verdicts = Vec::new();

    // Round 1: ten sequential repeats.
    let bodies = AtomicUsize::new(0);
    let mut hows = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..10 {
        let r = create_order(&idem, &orders, "r1-order", &bodies, false, false).await;
        ids.push(r.as_ref().ok().map(|o| *o.value()));
        hows.push(r.map(|o| o.how()).map_err(|e| e.to_string()));
    }
    let rows = orders.rows("r1-order").await?;
    let n = bodies.load(Ordering::SeqCst);
    verdicts.push(Verdict {
        round: "1 sequential ×10",
        calls: 10,
        bodies: n,
        rows,
        outcomes: tally(&hows),
        pass: n == 1 && rows == 1 && ids.iter().all(|i| i.is_some() && *i == ids[0]),
    });

    // Round 2: fifty concurrent callers, one key.
    let (n, results) = concurrent_copies(&idem, &orders, "r2-order", 50, false).await?;
    let rows = orders.rows("r2-order").await?;
    let first_id = results
        .iter()
        .find_map(|r| r.as_ref().ok().map(|(_, id)| *id));
    let hows: Vec<_> = results.iter().map(|r| r.clone().map(|(h, _)| h)).collect();
    verdicts.push(Verdict {
        round: "2 concurrent ×50",
        calls: 50,
        bodies: n,
        rows,
        outcomes: tally(&hows),
        pass: n == 1
            && rows == 1
            && results
                .iter()
                .all(|r| r.as_ref().ok().map(|(_, id)| *id) == first_id),
    });

    // Round 3: the first attempt writes the order, then fails; the retry must not
    // create a second order: the unique index answers, `on_conflict` loads it.
    let bodies = AtomicUsize::new(0);
    let first = create_order(&idem, &orders, "r3-order", &bodies, true, false).await;
    let retry = create_order(&idem, &orders, "r3-order", &bodies, false, false).await;
    let again = create_order(&idem, &orders, "r3-order", &bodies, false, false).await;
    let rows = orders.rows("r3-order").await?;
    let n = bodies.load(Ordering::SeqCst);
    let pass = matches!(first, Err(OrderError::Downstream))
        && matches!(&retry, Ok(o) if o.how() == How::Backstop)
        && matches!(&again, Ok(o) if o.how() == How::Replayed)
        && rows == 1;
    let hows = [
        first.map(|o| o.how()).map_err(|e| e.to_string()),
        retry.map(|o| o.how()).map_err(|e| e.to_string()),
        again.map(|o| o.how()).map_err(|e| e.to_string()),
    ];
    verdicts.push(Verdict {
        round: "3 fail after write, retry",
        calls: 3,
        bodies: n,
        rows,
        outcomes: tally(&hows),
        pass,
    });

    // Round 4: the record store is down; callers opted into `degrade_to_backstop`,
    // so the bodies run and the unique index lets exactly one order through.
    faulty.set_unavailable(true);
    let (n4, results) = concurrent_copies(&idem, &orders, "r4-order", 10, true).await?;
    faulty.set_unavailable(false);
    let rows = orders.rows("r4-order").await?;
    let first_id = results
        .iter()
        .find_map(|r| r.as_ref().ok().map(|(_, id)| *id));
    let hows: Vec<_> = results.iter().map(|r| r.clone().map(|(h, _)| h)).collect();
    verdicts.push(Verdict {
        round: "4 store down, backstop",
        calls: 10,
        bodies: n4,
        rows,
        outcomes: tally(&hows),
        pass: rows == 1
            && results
                .iter()
                .all(|r| r.as_ref().ok().map(|(_, id)| *id) == first_id),
    });

    println!(
        "{:<28} {:>5} {:>6} {:>4}  {:<7} outcomes",
        "round", "calls", "bodies", "rows", "verdict"
    );
    for v in &verdicts {
        println!(
            "{:<28} {:>5} {:>6} {:>4}  {:<7} {}",
            v.round,
            v.calls,
            v.bodies,
            v.rows,
            if v.pass { "PASS" } else { "FAIL" },
            v.outcomes
        );
    }
    let stats = idem.stats();
    println!(
        "\ncalls {}, interception rate {:.1}%, backstop hits {}",
        stats.calls(),
        stats.interception_rate() * 100.0,
        stats.backstop_hits()
    );
    orders.drop_table().await?;
    if verdicts.iter().all(|v| v.pass) {
        Ok(())
    } else {
        eprintln!("some rounds failed");
        std::process::exit(1);
    }
}
