//! A real network outage between a `RedisStore` and a test-owned `redis-server`,
//! made by the fault-injecting proxy of `support::proxy` (issue 19): black holes
//! that deliver on heal, cuts, slow replies. What the library did is asserted
//! from the business side (body runs, rows) and from what it reported (the
//! outcome of each call, `Stats`, `reported`).
//!
//! - `counters`: a scripted outage, exact counters before and after, and the time
//!   from heal to the first non-degraded call;
//! - `burst`: 8 tasks, 200 calls over 50 keys through a 3 s black hole, with
//!   `degrade = "backstop"` and with the in-process claim (`degrade_local`);
//! - `unstored`: a result whose `complete` met a black hole longer than the lease
//!   is reported `not_stored`; one whose outage healed within the lease is
//!   stored by the background `complete`, through the open breaker;
//! - `sockets`: the proxy's own faults, a cut and its recovery, and a slow claim
//!   reply that must not let a duplicate run beside the body.

mod burst;
mod counters;
mod sockets;
mod unstored;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::store::redis::RedisStore;
use idem::{Hooks, Idem, Outcome};
use sqlx::SqlitePool;

use crate::support::proxy::Proxy;
use crate::support::redis_server::RedisServer;
use crate::support::tempdir::TempDir;
use crate::support::{AppError, sqlite_business_db, unique_ns};

/// Each store operation's budget: short, so a black hole costs a call little.
pub const OP_TIMEOUT: Duration = Duration::from_millis(250);
/// 12 × the operation budget: no test here waits for it to lapse but `unstored`,
/// which sets its own.
pub const LEASE: Duration = Duration::from_secs(3);
/// Consecutive failures that open the breaker.
pub const THRESHOLD: u32 = 5;

/// How an order call degrades when the store is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `degrade = "backstop"`: every call runs its body.
    Backstop,
    /// `degrade_local`: one body per key in this process, duplicates wait for it.
    Local,
}

/// A server, the proxy in front of it, a handle whose store goes through the
/// proxy, and the business database.
pub struct Rig {
    pub proxy: Proxy,
    pub idem: Idem,
    pub orders: Arc<Orders>,
    _server: RedisServer,
}

impl Rig {
    pub async fn start(cooldown: Duration) -> Rig {
        Rig::start_with(THRESHOLD, cooldown).await
    }

    /// A rig whose breaker opens after `threshold` consecutive failures.
    pub async fn start_with(threshold: u32, cooldown: Duration) -> Rig {
        let server = RedisServer::start();
        let proxy = Proxy::start(server.port).await;
        let store = RedisStore::connect(&proxy.redis_url())
            .await
            .expect("connect through the proxy");
        let idem = Idem::builder()
            .store(store)
            .namespace(unique_ns("outage"))
            .op_timeout(OP_TIMEOUT)
            .circuit_breaker(threshold, cooldown)
            .build()
            .unwrap();
        Rig {
            proxy,
            idem,
            orders: Orders::new().await,
            _server: server,
        }
    }
}

/// The business: one row per order number (unique index `uk_order_no`), inserted
/// first by the body; `on_conflict` loads the existing row's id.
pub struct Orders {
    pool: SqlitePool,
    runs: Mutex<HashMap<String, u32>>,
    _dir: TempDir,
}

impl Orders {
    pub async fn new() -> Arc<Orders> {
        let (pool, dir) = sqlite_business_db().await;
        Arc::new(Orders {
            pool,
            runs: Mutex::default(),
            _dir: dir,
        })
    }

    /// Creates order `no`: the body inserts, then takes `hold` (the rest of the
    /// business work).
    pub async fn create(
        self: &Arc<Self>,
        idem: &Idem,
        no: &str,
        mode: Mode,
        hold: Duration,
    ) -> Result<Outcome<i64>, AppError> {
        let (me, me2) = (Arc::clone(self), Arc::clone(self));
        let (no1, no2) = (no.to_owned(), no.to_owned());
        let hooks = Hooks::new()
            .detect(idem::std_error)
            .on_conflict(move || async move {
                let id: i64 = sqlx::query_scalar("SELECT id FROM orders WHERE order_no = ?")
                    .bind(&no2)
                    .fetch_one(&me2.pool)
                    .await?;
                Ok::<_, AppError>(id)
            });
        let guard = idem
            .guard("order-create", &[&no])
            .lease(LEASE)
            .backstop("uk_order_no");
        let guard = match mode {
            Mode::Backstop => guard.degrade_to_backstop(),
            Mode::Local => guard.degrade_locally(),
        };
        guard
            .run_with(hooks, || async move {
                *me.runs.lock().unwrap().entry(no1.clone()).or_default() += 1;
                let id = sqlx::query("INSERT INTO orders (order_no, amount) VALUES (?, 1)")
                    .bind(&no1)
                    .execute(&me.pool)
                    .await?
                    .last_insert_rowid();
                tokio::time::sleep(hold).await;
                Ok::<_, AppError>(id)
            })
            .await
    }

    /// Body runs per order number.
    pub fn runs(&self) -> HashMap<String, u32> {
        self.runs.lock().unwrap().clone()
    }

    /// (rows, distinct order numbers).
    pub async fn rows(&self) -> (i64, i64) {
        sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT order_no) FROM orders")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}
