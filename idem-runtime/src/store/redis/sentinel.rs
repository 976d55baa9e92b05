//! A [`RedisStore`](super::RedisStore) behind Redis Sentinel: the primary is
//! asked of the sentinels, and asked again when it stops taking writes.
//!
//! Each of the store's connections is a [`Link`]: a self-reconnecting
//! connection (`ConnectionManager`) to the primary the sentinels named last. A
//! command that fails as an outage (refused connection, timeout, `READONLY`
//! from a demoted primary, `MASTERDOWN`...) fails as it does on any store
//! (`StoreError::Unavailable`: the guard retries it with the same owner, or
//! fails closed, or degrades), and starts one background question to the
//! sentinels (so does a command abandoned before its answer: a hung primary
//! answers nothing, and the guard cuts the attempt at its deadline); when they name another primary, the link's later commands go
//! there. A command never moves to the new primary half-way: one store
//! operation (its write and its `WAIT`) runs on the connection it started on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::store::StoreError;

pub(super) use super::sentinel_spec::{SCHEME, SentinelSpec};

/// The shortest time between two questions a link asks the sentinels.
const ASK_EVERY: Duration = Duration::from_millis(250);

/// How the links of one store ask the sentinels (shared by its connections).
pub(super) struct Resolver {
    sentinel: tokio::sync::Mutex<Sentinel>,
    spec: SentinelSpec,
    node: SentinelNodeConnectionInfo,
    config: ConnectionManagerConfig,
    connect_timeout: Duration,
}

impl Resolver {
    pub(super) fn new(
        spec: SentinelSpec,
        config: ConnectionManagerConfig,
        connect_timeout: Duration,
    ) -> Result<Self, StoreError> {
        let sentinel = Sentinel::build(spec.sentinels.clone())
            .map_err(|e| StoreError::config(format!("sentinel addresses: {e}")).with_source(e))?;
        let mut info = redis::RedisConnectionInfo::default().set_db(spec.db);
        if let Some(u) = &spec.username {
            info = info.set_username(u);
        }
        if let Some(p) = &spec.password {
            info = info.set_password(p);
        }
        let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(info);
        Ok(Resolver {
            sentinel: tokio::sync::Mutex::new(sentinel),
            spec,
            node,
            config,
            connect_timeout,
        })
    }

    /// The primary's address (`host:port`) and a connection manager on it, as the
    /// sentinels name it now. Bounded: the sentinels are asked one after another,
    /// each within the connect timeout.
    async fn primary(&self) -> Result<(String, ConnectionManager), StoreError> {
        let budget = self
            .connect_timeout
            .saturating_mul(self.spec.sentinels.len().max(1) as u32 + 1);
        let master = &self.spec.master;
        let ask = async {
            let mut s = self.sentinel.lock().await;
            s.async_master_for(master, Some(&self.node)).await
        };
        let client = tokio::time::timeout(budget, ask)
            .await
            .map_err(|_| {
                StoreError::unavailable(format!(
                    "no sentinel named a primary for `{master}` within {budget:?}; check that \
                     the sentinels ({}) are running and reachable",
                    self.spec.sentinels.join(", ")
                ))
            })?
            .map_err(|e| self.explain(e))?;
        let addr = client.get_connection_info().addr().to_string();
        let con = ConnectionManager::new_lazy_with_config(client, self.config.clone())
            .map_err(|e| StoreError::config(e.to_string()).with_source(e))?;
        Ok((addr, con))
    }

    /// A sentinel error as the operator reads it.
    fn explain(&self, e: redis::RedisError) -> StoreError {
        let master = &self.spec.master;
        if e.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel {
            return StoreError::config(format!(
                "no sentinel knows a master named `{master}`: check the master name (the \
                 sentinels' `sentinel monitor <name> …` line)"
            ))
            .with_source(e);
        }
        StoreError::unavailable(format!(
            "asking the sentinels ({}) for `{master}`: {e}; check that they are running \
             and reachable, and that the primary they name is up",
            self.spec.sentinels.join(", ")
        ))
        .with_source(e)
    }
}

/// The primary the sentinels named last, with a generation that grows with
/// each change.
struct Current {
    generation: u64,
    addr: String,
    con: ConnectionManager,
}

/// One of the store's connections to the primary, re-pointed after a failover.
pub(super) struct Link {
    resolver: Arc<Resolver>,
    current: Mutex<Current>,
    asking: AtomicBool,
}

impl Link {
    /// Asks the sentinels for the primary and opens a link to it.
    pub(super) async fn open(resolver: Arc<Resolver>) -> Result<Arc<Self>, StoreError> {
        let (addr, con) = resolver.primary().await?;
        Ok(Arc::new(Link {
            resolver,
            current: Mutex::new(Current {
                generation: 0,
                addr,
                con,
            }),
            asking: AtomicBool::new(false),
        }))
    }

    /// Asks the sentinels now and points the link at the primary they name.
    async fn resolve(&self) -> Result<(), StoreError> {
        let (addr, con) = self.resolver.primary().await?;
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if cur.addr == addr {
            return Ok(());
        }
        tracing::info!(from = %cur.addr, to = %addr, master = %self.resolver.spec.master,
            "redis sentinel: the store follows a new primary");
        *cur = Current {
            generation: cur.generation + 1,
            addr,
            con,
        };
        Ok(())
    }

    /// The connection now, and its generation.
    fn current(&self) -> (u64, ConnectionManager) {
        let cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        (cur.generation, cur.con.clone())
    }

    /// A command on `generation` failed as an outage, or was abandoned: ask
    /// the sentinels again, in the background, one question at a time and at
    /// most every [`ASK_EVERY`].
    fn failed(self: &Arc<Self>, generation: u64) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.current().0 != generation || self.asking.swap(true, Ordering::AcqRel) {
            return;
        }
        let link = Arc::clone(self);
        rt.spawn(async move {
            if let Err(e) = link.resolve().await {
                tracing::debug!(error = %e, "redis sentinel: no new primary yet");
            }
            tokio::time::sleep(ASK_EVERY).await;
            link.asking.store(false, Ordering::Release);
        });
    }
}

/// The connection one store operation runs on: a plain connection manager, or
/// a Sentinel link's connection of the moment, pinned for the operation (its
/// write and its `WAIT` go to the same server).
#[derive(Clone)]
pub(crate) enum Primary {
    Direct(ConnectionManager),
    Sentinel(Arc<Link>, u64, ConnectionManager),
}

/// Watches one command on a Sentinel link: an outage answer, or a command
/// abandoned before its answer (a hung primary: the guard cut the attempt at
/// its deadline), sends the link to the sentinels.
struct Watch {
    link: Arc<Link>,
    generation: u64,
    settled: bool,
}

impl Watch {
    fn settle<T>(mut self, r: &redis::RedisResult<T>) {
        self.settled = true;
        if let Err(e) = r
            && !super::errors::refused(e)
        {
            self.link.failed(self.generation);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.settled {
            self.link.failed(self.generation);
        }
    }
}

impl Primary {
    /// The connection, and a watch on it when it is a Sentinel link's.
    fn watched(&mut self) -> (Option<Watch>, &mut ConnectionManager) {
        match self {
            Primary::Direct(con) => (None, con),
            Primary::Sentinel(link, generation, con) => (
                Some(Watch {
                    link: Arc::clone(link),
                    generation: *generation,
                    settled: false,
                }),
                con,
            ),
        }
    }
}

impl ConnectionLike for Primary {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        if let Primary::Direct(con) = self {
            return con.req_packed_command(cmd);
        }
        Box::pin(async move {
            let (watch, con) = self.watched();
            let r = con.req_packed_command(cmd).await;
            if let Some(w) = watch {
                w.settle(&r);
            }
            r
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        if let Primary::Direct(con) = self {
            return con.req_packed_commands(cmd, offset, count);
        }
        Box::pin(async move {
            let (watch, con) = self.watched();
            let r = con.req_packed_commands(cmd, offset, count).await;
            if let Some(w) = watch {
                w.settle(&r);
            }
            r
        })
    }

    fn get_db(&self) -> i64 {
        match self {
            Primary::Direct(con) | Primary::Sentinel(_, _, con) => con.get_db(),
        }
    }
}

impl super::durability::Acks for Primary {
    fn wait_for<'a>(&'a mut self, _record: &'a [u8], cmd: Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move { cmd.query_async(self).await })
    }
}

/// A pool slot of a single-node store: a connection manager, or a Sentinel link.
#[derive(Clone)]
pub(super) enum Route {
    Direct(ConnectionManager),
    Sentinel(Arc<Link>),
}

impl Route {
    /// The connection for one operation.
    pub(super) fn open(self) -> Primary {
        match self {
            Route::Direct(con) => Primary::Direct(con),
            Route::Sentinel(link) => {
                let (generation, con) = link.current();
                Primary::Sentinel(link, generation, con)
            }
        }
    }

    /// A connection manager for commands of the application's own: the
    /// primary's as the link knows it now.
    pub(super) fn manager(self) -> ConnectionManager {
        match self {
            Route::Direct(con) => con,
            Route::Sentinel(link) => link.current().1,
        }
    }
}
