//! The seed's §6.1 recipes on the transactional guard, per database: a hot
//! SKU's stock deducted by a conditional update (`stock >= n`), cumulative
//! refunds on one order bounded by the paid amount. The guard makes each
//! request apply once; the conditional update keeps the business invariant.

use std::sync::Arc;

use idem::{How, Idem};

use crate::support::{AppError, unique_ns};
use crate::tx::support::{TestDb, V, is_tx_conflict};

const TABLES: [&str; 4] = [
    "CREATE TABLE t_sku (sku_id VARCHAR(64) NOT NULL PRIMARY KEY, stock BIGINT NOT NULL)",
    "CREATE TABLE t_sale (req_id VARCHAR(64) NOT NULL PRIMARY KEY, sku_id VARCHAR(64) NOT NULL)",
    "CREATE TABLE t_pay (order_no VARCHAR(64) NOT NULL PRIMARY KEY, paid BIGINT NOT NULL, refunded BIGINT NOT NULL)",
    "CREATE TABLE t_refund (refund_id VARCHAR(64) NOT NULL PRIMARY KEY, order_no VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)",
];

/// Runs `scene:<req>` once through the guard in its own transaction: the
/// conditional update, then the business row when it applied. Retried whole
/// on a transaction conflict. The stored value says whether it applied.
async fn once<D: TestDb>(
    db: &D,
    idem: &Idem,
    scene: &str,
    req: &str,
    update: (&str, Vec<V>),
    insert: (&str, Vec<V>),
) -> (bool, How) {
    let (update, insert) = (&update, &insert);
    for _ in 0..50 {
        let mut tx = db.begin().await;
        let r = idem
            .guard(scene, &[&req])
            .in_tx(&mut tx)
            .run(|tx, _fence| {
                Box::pin(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    if D::exec(tx.transaction(), update.0, &update.1).await? == 0 {
                        return Ok::<_, AppError>(false);
                    }
                    D::exec(tx.transaction(), insert.0, &insert.1).await?;
                    Ok(true)
                })
            })
            .await;
        match r {
            Ok(out) => match tx.commit().await {
                Ok(()) => return (*out.value(), out.how()),
                Err(e) if idem::db::is_retryable_conflict(&e) => {}
                Err(e) => panic!("{}: commit: {e}", D::NAME),
            },
            Err(e) if is_tx_conflict(&e) => {
                let _ = tx.rollback().await;
            }
            Err(e) => panic!("{}: {e}", D::NAME),
        }
    }
    panic!("{}: 50 conflicts in a row", D::NAME)
}

fn handle<D: TestDb>(db: &D) -> Arc<Idem> {
    Arc::new(
        Idem::builder()
            .store(db.store())
            .namespace(unique_ns("recipe"))
            .build()
            .unwrap(),
    )
}

/// Starts `calls` concurrently on one thread (see `tx_guard.rs`) and collects
/// their answers.
async fn all<F: std::future::Future<Output = (bool, How)> + 'static>(
    calls: Vec<F>,
) -> Vec<(bool, How)> {
    let local = tokio::task::LocalSet::new();
    let tasks: Vec<_> = calls.into_iter().map(|c| local.spawn_local(c)).collect();
    local
        .run_until(async move {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.expect("caller"));
            }
            out
        })
        .await
}

/// 50 buyers of a SKU with stock 20, each request sent 3 times at once:
/// exactly 20 succeed, the stock ends at 0 and never goes negative, and each
/// buyer is deducted at most once.
async fn inventory<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 12).await;
    let idem = handle(&db);
    let mut setup = db.begin().await;
    D::exec(
        &mut setup,
        "INSERT INTO t_sku (sku_id, stock) VALUES ('hot', 20)",
        &[],
    )
    .await
    .unwrap();
    setup.commit().await.unwrap();
    // 50 buyers at once, each sending its request 3 times (a client retrying).
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = tokio::task::JoinSet::new();
    for buyer in 0..50 {
        let (db, idem, barrier) = (db.clone(), Arc::clone(&idem), Arc::clone(&barrier));
        tasks.spawn(async move {
            barrier.wait().await;
            let req = format!("buyer-{buyer}");
            let mut got = Vec::new();
            for _ in 0..3 {
                let update = (
                    "UPDATE t_sku SET stock = stock - 1 WHERE sku_id = 'hot' AND stock >= 1",
                    vec![],
                );
                let insert = (
                    "INSERT INTO t_sale (req_id, sku_id) VALUES (?, 'hot')",
                    vec![V::S(req.clone())],
                );
                got.push(once(&db, &idem, "sku-buy", &req, update, insert).await);
            }
            assert!(got.iter().all(|(ok, _)| *ok == got[0].0), "{req}: {got:?}");
            got
        });
    }
    let answers: Vec<(bool, How)> = tasks.join_all().await.into_iter().flatten().collect();
    let executed_ok = answers
        .iter()
        .filter(|(ok, h)| *ok && *h == How::Executed)
        .count();
    let intercepted = answers.iter().filter(|(_, h)| *h != How::Executed).count();
    let stock = db
        .int("SELECT stock FROM t_sku WHERE sku_id = 'hot'", &[])
        .await;
    let sales = db.int("SELECT COUNT(*) FROM t_sale", &[]).await;
    eprintln!(
        "inventory {}: 150 calls (50 concurrent buyers x 3) -> {executed_ok} deductions, {intercepted} duplicates replayed, stock {stock}, sale rows {sales}",
        D::NAME
    );
    assert_eq!(executed_ok, 20);
    assert_eq!(intercepted, 100, "each buyer's repeats replay");
    assert_eq!(stock, 0);
    assert_eq!(sales, 20);
    // Each buyer got one answer, the same for all three of its requests.
    assert_eq!(answers.iter().filter(|(ok, _)| *ok).count(), 60);
}
crate::support::sql::per_database!(generic: inventory_hot_sku, inventory);

/// 50 refund requests on one order (10 refund ids, each sent 5 times at
/// once): the refunded total is the sum of the distinct refunds, never above
/// the paid amount.
async fn refunds<D: TestDb>() {
    let (db, _place) = D::fixture(&TABLES, 12).await;
    let idem = handle(&db);
    let mut setup = db.begin().await;
    D::exec(
        &mut setup,
        "INSERT INTO t_pay (order_no, paid, refunded) VALUES ('o-1', 100, 0)",
        &[],
    )
    .await
    .unwrap();
    setup.commit().await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut calls = Vec::new();
    for id in 0..10_i64 {
        for _ in 0..5 {
            let (db, idem, barrier) = (db.clone(), Arc::clone(&idem), Arc::clone(&barrier));
            calls.push(async move {
                barrier.wait().await;
                let amount = 3 + id; // 3..=12: 75 in all, under the 100 paid
                let refund = format!("rf-{id}");
                let update = (
                    "UPDATE t_pay SET refunded = refunded + ? WHERE order_no = 'o-1' AND refunded + ? <= paid",
                    vec![V::I(amount), V::I(amount)],
                );
                let insert = (
                    "INSERT INTO t_refund (refund_id, order_no, amount) VALUES (?, 'o-1', ?)",
                    vec![V::S(refund.clone()), V::I(amount)],
                );
                once(&db, &idem, "refund", &refund, update, insert).await
            });
        }
    }
    let answers = all(calls).await;
    let executed = answers.iter().filter(|(_, h)| *h == How::Executed).count();
    let refunded = db
        .int("SELECT refunded FROM t_pay WHERE order_no = 'o-1'", &[])
        .await;
    // Summed in Rust: SUM is NUMERIC/DECIMAL on the servers.
    let mut rows = 0;
    for id in 0..10_i64 {
        let args = [V::S(format!("rf-{id}"))];
        rows += db
            .int("SELECT amount FROM t_refund WHERE refund_id = ?", &args)
            .await;
    }
    let n = db.int("SELECT COUNT(*) FROM t_refund", &[]).await;
    eprintln!(
        "refunds {}: 50 calls (10 ids x 5) -> {executed} executed, refunded {refunded} of paid 100, refund rows {n} summing {rows}",
        D::NAME
    );
    assert_eq!(executed, 10);
    assert_eq!(n, 10);
    assert_eq!(refunded, 75);
    assert_eq!(rows, refunded);
    assert!(refunded <= 100);
}
crate::support::sql::per_database!(generic: refunds_on_one_order, refunds);
