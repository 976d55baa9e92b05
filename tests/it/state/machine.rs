//! `#[derive(StateMachine)]`, `#[state_transition]`, `#[transitions]` and
//! `idem::state::transition` on PostgreSQL, MariaDB and SQLite: the same suite
//! is instantiated per database by `suite!` (the attribute's transaction type
//! names the database).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::state::order::{AppError, OrderStatus};
use crate::state::support::{assert_send, futures_join_all};
use idem::Transition;

macro_rules! suite {
    ($name:ident, $db:ty, $fixture:path, $pg:expr) => {
        mod $name {
            use super::*;
            use sqlx::Connection as _;

            type Db = $db;
            type Pool = sqlx::Pool<Db>;

            /// `?` placeholders, numbered on PostgreSQL.
            fn q(sql: &str) -> sqlx::AssertSqlSafe<String> {
                sqlx::AssertSqlSafe(if $pg {
                    crate::tx::support::pg_sql(sql)
                } else {
                    sql.to_owned()
                })
            }

            fn handle() -> idem::Idem {
                idem::Idem::builder().store(idem::MemoryStore::new()).build().unwrap()
            }

            async fn order(pool: &Pool, no: &str, status: OrderStatus) {
                sqlx::query(q("INSERT INTO t_order (order_no, status) VALUES (?, ?)"))
                    .bind(no)
                    .bind(status)
                    .execute(pool)
                    .await
                    .unwrap();
            }

            /// (state, version) of an order.
            async fn row(pool: &Pool, no: &str) -> (OrderStatus, i64) {
                sqlx::query_as(q("SELECT status, version FROM t_order WHERE order_no = ?"))
                    .bind(no)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }

            async fn count(pool: &Pool, sql: &str) -> i64 {
                sqlx::query_scalar(q(sql)).fetch_one(pool).await.unwrap()
            }

            /// The payment callback: WAIT_PAY -> PAY_SUCCESS, the ledger row is the
            /// body's write (its primary key, the payment number, is the backstop).
            #[idem::state_transition(machine = OrderStatus, from = WaitPay, to = PaySuccess,
                table = "t_order", key = order_no, key_column = "order_no", tx = tx,
                version_column = "version", handle = idem)]
            async fn on_paid(
                idem: &idem::Idem,
                tx: &mut sqlx::Transaction<'_, Db>,
                order_no: &str,
                pay_no: &str,
                delay: Duration,
                fail: bool,
                runs: &AtomicUsize,
            ) -> Result<Transition<i64>, AppError> {
                runs.fetch_add(1, Ordering::SeqCst);
                sqlx::query(q("INSERT INTO t_ledger (pay_no, order_no, amount) VALUES (?, ?, 100)"))
                    .bind(pay_no)
                    .bind(order_no)
                    .execute(&mut **tx)
                    .await?;
                tokio::time::sleep(delay).await;
                if fail {
                    return Err(AppError::Body);
                }
                Ok(100)
            }

            /// The two exits of PAY_SUCCESS, by stored value, with and without a
            /// version column.
            #[idem::state_transition(machine = OrderStatus, from = "PAY_SUCCESS", to = "SHIPPED",
                table = "t_order", key = order_no, key_column = "order_no", version_column = "version")]
            async fn ship(tx: &mut sqlx::Transaction<'_, Db>, order_no: &str, delay: Duration)
                -> Result<Transition<()>, AppError> {
                tokio::time::sleep(delay).await;
                Ok(())
            }

            #[idem::state_transition(machine = OrderStatus, from = PaySuccess, to = Refunding,
                table = "t_order", key = order_no, key_column = "order_no", version_column = "version")]
            async fn refund(tx: &mut sqlx::Transaction<'_, Db>, order_no: &str, delay: Duration)
                -> Result<Transition<()>, AppError> {
                tokio::time::sleep(delay).await;
                Ok(())
            }

            #[idem::state_transition(machine = OrderStatus, from = PaySuccess, to = Shipped,
                table = "t_order", key = order_no, key_column = "order_no")]
            async fn ship_unversioned(tx: &mut sqlx::Transaction<'_, Db>, order_no: &str, delay: Duration)
                -> Result<Transition<()>, AppError> {
                tokio::time::sleep(delay).await;
                Ok(())
            }

            #[idem::state_transition(machine = OrderStatus, from = PaySuccess, to = Refunding,
                table = "t_order", key = order_no, key_column = "order_no")]
            async fn refund_unversioned(tx: &mut sqlx::Transaction<'_, Db>, order_no: &str, delay: Duration)
                -> Result<Transition<()>, AppError> {
                tokio::time::sleep(delay).await;
                Ok(())
            }

            /// The card's bare form: the impl carries the machine-level options.
            pub struct Orders;

            #[idem::transitions(machine = OrderStatus, table = "t_order", key = order_no,
                key_column = "order_no", tx = tx)]
            impl Orders {
                #[state_transition(from = "WAIT_PAY", to = "PAY_SUCCESS")]
                async fn paid(&self, tx: &mut sqlx::Transaction<'_, Db>, order_no: &str)
                    -> Result<Transition<&'static str>, AppError> {
                    Ok("paid")
                }

                #[idem::state_transition(from = [WaitPay, PaySuccess], to = Cancelled)]
                async fn close(&self, tx: &mut sqlx::Transaction<'_, Db>, order_no: &str)
                    -> Result<Transition<()>, AppError> {
                    Ok(())
                }
            }

            type Paid = Result<Transition<i64>, AppError>;

            async fn deliver(pool: &Pool, idem: &idem::Idem, no: &str, pay_no: &str, delay: Duration, fail: bool, runs: &AtomicUsize) -> Paid {
                let mut tx = pool.begin().await?;
                let out = on_paid(idem, &mut tx, no, pay_no, delay, fail, runs).await?;
                tx.commit().await?;
                Ok(out)
            }

            /// Five concurrent deliveries of one callback: one applies, four
            /// find it applied (after waiting on the row), one ledger row.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn callback_delivered_five_times_concurrently() {
                let (pool, _place) = $fixture().await;
                let idem = handle();
                order(&pool, "o-1", OrderStatus::WaitPay).await;
                let runs = AtomicUsize::new(0);
                let barrier = tokio::sync::Barrier::new(5);
                let delay = Duration::from_millis(400);
                let calls = (0..5).map(|_| async {
                    barrier.wait().await;
                    let t = Instant::now();
                    let r = deliver(&pool, &idem, "o-1", "pay-1", delay, false, &runs).await;
                    (r, t.elapsed())
                });
                let results = futures_join_all(calls).await;
                let applied = results.iter().filter(|(r, _)| matches!(r, Ok(Transition::Applied(100)))).count();
                let repeats: Vec<Duration> = results
                    .iter()
                    .filter(|(r, _)| matches!(r, Ok(Transition::AlreadyApplied { current: "PAY_SUCCESS" })))
                    .map(|(_, t)| *t)
                    .collect();
                assert_eq!((applied, repeats.len()), (1, 4), "{results:?}");
                assert!(
                    repeats.iter().any(|t| *t >= delay / 2),
                    "a duplicate waited for the first transaction: {repeats:?}"
                );
                assert_eq!(runs.load(Ordering::SeqCst), 1, "the body ran once");
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_ledger").await, 1);
                assert_eq!(row(&pool, "o-1").await, (OrderStatus::PaySuccess, 1));
                let s = idem.stats();
                assert_eq!((s.count("applied"), s.count("already_applied")), (1, 4));
                // The repeated callback is the scope's most-repeated key.
                let top = &s.top_keys[0];
                assert_eq!((top.scope.as_str(), top.key.as_str(), top.count), ("t_order", "t_order:o-1", 4), "{s:?}");
            }

            /// A PAY_SUCCESS callback arriving after shipping is a repeat: nothing
            /// written, the body does not run.
            #[tokio::test]
            async fn out_of_order_delivery_is_already_applied() {
                let (pool, _place) = $fixture().await;
                let idem = handle();
                order(&pool, "o-2", OrderStatus::Shipped).await;
                let runs = AtomicUsize::new(0);
                let r = deliver(&pool, &idem, "o-2", "pay-2", Duration::ZERO, false, &runs).await;
                assert!(matches!(r, Ok(Transition::AlreadyApplied { current: "SHIPPED" })), "{r:?}");
                assert_eq!(runs.load(Ordering::SeqCst), 0);
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_ledger").await, 0);
                assert_eq!(row(&pool, "o-2").await, (OrderStatus::Shipped, 0));
            }

            /// A row in a state the edge does not start from (and not past its
            /// target): `InvalidTransition` naming all three; no row: `NotFound`.
            #[tokio::test]
            async fn unexpected_state_and_absent_row() {
                let (pool, _place) = $fixture().await;
                order(&pool, "o-3", OrderStatus::Refunded).await;
                let mut tx = pool.begin().await.unwrap();
                let r = ship(&mut tx, "o-3", Duration::ZERO).await;
                match r {
                    Err(AppError::Idem(idem::Error::InvalidTransition { key, from, to, current })) => {
                        assert_eq!((from.as_str(), to.as_str(), current.as_str()), ("PAY_SUCCESS", "SHIPPED", "REFUNDED"));
                        assert!(key.ends_with("t_order:o-3"), "{key}");
                    }
                    other => panic!("expected InvalidTransition, got {other:?}"),
                }
                let r = ship(&mut tx, "nope", Duration::ZERO).await;
                assert!(matches!(r, Err(AppError::Idem(idem::Error::NotFound { .. }))), "{r:?}");
                // The caller's transaction is still usable after both.
                tx.commit().await.unwrap();
                assert_eq!(row(&pool, "o-3").await, (OrderStatus::Refunded, 0));
                // REFUNDED is past PAY_SUCCESS (PaySuccess -> Refunding -> Refunded):
                // a late payment callback on a refunded order is a repeat.
                let runs = AtomicUsize::new(0);
                let r = deliver(&pool, &handle(), "o-3", "pay-3", Duration::ZERO, false, &runs).await;
                assert!(matches!(r, Ok(Transition::AlreadyApplied { current: "REFUNDED" })), "{r:?}");
            }

            async fn race(pool: &Pool, no: &str, versioned: bool) -> (Result<Transition<()>, AppError>, Result<Transition<()>, AppError>) {
                let barrier = tokio::sync::Barrier::new(2);
                let delay = Duration::from_millis(300);
                let one = |shipping: bool| {
                    let barrier = &barrier;
                    async move {
                        barrier.wait().await;
                        let mut tx = pool.begin().await?;
                        let r = match (shipping, versioned) {
                            (true, true) => ship(&mut tx, no, delay).await,
                            (false, true) => refund(&mut tx, no, delay).await,
                            (true, false) => ship_unversioned(&mut tx, no, delay).await,
                            (false, false) => refund_unversioned(&mut tx, no, delay).await,
                        }?;
                        tx.commit().await?;
                        Ok::<_, AppError>(r)
                    }
                };
                tokio::join!(one(true), one(false))
            }

            /// Shipping and refunding one paid order at once: exactly one wins,
            /// the other sees the winner's state, with and without a version.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_different_transitions_from_one_state() {
                let (pool, _place) = $fixture().await;
                for versioned in [true, false] {
                    let no = format!("o-4-{versioned}");
                    order(&pool, &no, OrderStatus::PaySuccess).await;
                    let (shipped, refunded) = race(&pool, &no, versioned).await;
                    let (state, version) = row(&pool, &no).await;
                    let (won, lost, want) = match (&shipped, &refunded) {
                        (Ok(Transition::Applied(())), lost) => ("ship", lost, OrderStatus::Shipped),
                        (lost, Ok(Transition::Applied(()))) => ("refund", lost, OrderStatus::Refunding),
                        other => panic!("neither applied: {other:?}"),
                    };
                    assert_eq!(state, want, "{won} won");
                    assert_eq!(version, i64::from(versioned));
                    match lost {
                        Err(AppError::Idem(idem::Error::InvalidTransition { current, .. })) => {
                            assert_eq!(current, want.as_str());
                        }
                        other => panic!("the loser must see the winner's state: {other:?}"),
                    }
                }
            }

            /// A body error after the update rolls back to the savepoint: the state
            /// is unchanged, the caller's own earlier write stays, a retry applies.
            #[tokio::test]
            async fn body_error_rolls_back_and_retry_applies() {
                let (pool, _place) = $fixture().await;
                let idem = handle();
                order(&pool, "o-5", OrderStatus::WaitPay).await;
                let runs = AtomicUsize::new(0);
                let mut tx = pool.begin().await.unwrap();
                sqlx::query(q("INSERT INTO t_note (id) VALUES (?)")).bind("before").execute(&mut *tx).await.unwrap();
                let r = on_paid(&idem, &mut tx, "o-5", "pay-5", Duration::ZERO, true, &runs).await;
                assert!(matches!(r, Err(AppError::Body)), "{r:?}");
                tx.commit().await.unwrap();
                assert_eq!(runs.load(Ordering::SeqCst), 1);
                assert_eq!(row(&pool, "o-5").await, (OrderStatus::WaitPay, 0), "state unchanged");
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_ledger").await, 0, "body write undone");
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_note").await, 1, "caller's write kept");
                let r = deliver(&pool, &idem, "o-5", "pay-5", Duration::ZERO, false, &runs).await;
                assert!(matches!(r, Ok(Transition::Applied(100))), "{r:?}");
                assert_eq!(row(&pool, "o-5").await, (OrderStatus::PaySuccess, 1));
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_ledger").await, 1);
                assert_eq!(idem.stats().count("released"), 1);
            }

            /// The bare `#[state_transition(from = "..", to = "..")]` inside a
            /// `#[transitions]` impl, and several sources.
            #[tokio::test]
            async fn impl_level_options_and_several_sources() {
                let (pool, _place) = $fixture().await;
                order(&pool, "o-6", OrderStatus::WaitPay).await;
                order(&pool, "o-7", OrderStatus::PaySuccess).await;
                order(&pool, "o-9", OrderStatus::Shipped).await;
                let mut tx = pool.begin().await.unwrap();
                assert_eq!(Orders.paid(&mut tx, "o-6").await.unwrap(), Transition::Applied("paid"));
                assert_eq!(
                    Orders.paid(&mut tx, "o-6").await.unwrap(),
                    Transition::AlreadyApplied { current: "PAY_SUCCESS" }
                );
                assert!(Orders.close(&mut tx, "o-7").await.unwrap().is_applied());
                let r = Orders.close(&mut tx, "o-9").await;
                assert!(matches!(r, Err(AppError::Idem(idem::Error::InvalidTransition { ref from, .. })) if from == "WAIT_PAY|PAY_SUCCESS"), "{r:?}");
                tx.commit().await.unwrap();
                assert_eq!(row(&pool, "o-7").await.0, OrderStatus::Cancelled);
                assert_eq!(row(&pool, "o-9").await.0, OrderStatus::Shipped);
            }

            /// The non-macro API: same statements and outcomes; an undeclared edge
            /// is a typed error before any statement.
            #[tokio::test]
            async fn non_macro_api() {
                let (pool, _place) = $fixture().await;
                order(&pool, "o-8", OrderStatus::WaitPay).await;
                let mut conn = pool.acquire().await.unwrap();
                let mut tx = conn.begin().await.unwrap();
                let no = "o-8".to_owned();
                for want_applied in [true, false] {
                    let r: Result<Transition<u8>, AppError> =
                        idem::state::transition(&mut tx, "t_order", "order_no", &no)
                            .from(OrderStatus::WaitPay)
                            .to(OrderStatus::PaySuccess)
                            .version_column("version")
                            .run(async |tx| {
                                sqlx::query(q("INSERT INTO t_note (id) VALUES (?)")).bind("api").execute(&mut **tx).await?;
                                Ok(7)
                            })
                            .await;
                    assert_eq!(r.unwrap().is_applied(), want_applied);
                }
                let r: Result<Transition<()>, AppError> =
                    idem::state::transition(&mut tx, "t_order", "order_no", &no)
                        .from(OrderStatus::WaitPay)
                        .to(OrderStatus::Shipped)
                        .run(async |_| Ok(()))
                        .await;
                assert!(matches!(r, Err(AppError::Idem(idem::Error::Config(ref m))) if m.contains("WaitPay -> Shipped")), "{r:?}");
                let r: Result<Transition<()>, AppError> =
                    idem::state::transition(&mut tx, "order", "order_no", &no)
                        .from(OrderStatus::WaitPay)
                        .to(OrderStatus::PaySuccess)
                        .run(async |_| Ok(()))
                        .await;
                assert!(matches!(r, Err(AppError::Idem(idem::Error::Config(_)))), "reserved table name: {r:?}");
                tx.commit().await.unwrap();
                assert_eq!(row(&pool, "o-8").await, (OrderStatus::PaySuccess, 1));
                // The attribute's future can be spawned (axum handlers need `Send`).
                let idem = handle();
                let runs = AtomicUsize::new(0);
                assert_send(&deliver(&pool, &idem, "o-8", "p", Duration::ZERO, false, &runs));
                assert_eq!(count(&pool, "SELECT COUNT(*) FROM t_note").await, 1);
            }
        }
    };
}

suite!(postgres, sqlx::Postgres, crate::state::support::pg, true);
suite!(mariadb, sqlx::MySql, crate::state::support::mysql, false);
suite!(sqlite, sqlx::Sqlite, crate::state::support::sqlite, false);
