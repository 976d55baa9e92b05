//! The scenarios of a run: what each exercises, its concurrency, and the
//! targets on A against the other sides (issue 17's for the Redis rows).

use serde::Serialize;

use crate::sql;

/// What a scenario exercises; its sides are built from this (in the worker
/// processes too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    RedisDuplicate,
    RedisFirst,
    /// `Durability::Replicated { replicas: 1 }` against no `WAIT`, on a
    /// primary and replica of the benchmark's own; recorded, no target.
    RedisWaitDuplicate,
    RedisWaitFirst,
    ClusterDuplicate,
    ClusterFirst,
    MemoryDuplicate,
    MemoryFirst,
    Backstop(sql::Db),
    SqlDuplicate(sql::Db),
    SqlFirst(sql::Db),
    HttpDuplicate,
    HttpFirst,
    /// Issue 29: every other technique against its floor (and its peers).
    Lock,
    /// The lock whose body reads its fence (`Lock::run`): the same floor and
    /// peer, which stamp no fence; recorded, no target.
    LockFenced,
    Token,
    StateCas,
    Transition,
    TxGuard,
    ConsumeAmqp,
    ConsumeNats,
    /// `#[idempotent]` beside the guard for the same call: duplicates (`true`)
    /// or first calls.
    Macro(crate::macro_rows::On, bool),
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", content = "limit", rename_all = "snake_case")]
pub(crate) enum Target {
    /// A's cost per call at most this many times B's.
    CostAtMost(f64),
    /// A's throughput at least this fraction of B's.
    ThroughputAtLeast(f64),
}

impl Target {
    pub(crate) fn met(self, ratio: f64) -> bool {
        match self {
            Target::CostAtMost(x) => ratio <= x,
            Target::ThroughputAtLeast(x) => 1.0 / ratio >= x,
        }
    }
    pub(crate) fn text(self) -> String {
        match self {
            Target::CostAtMost(x) => format!("cost ≤ {x:.2}×"),
            Target::ThroughputAtLeast(x) => format!("thr ≥ {x:.2}×"),
        }
    }
}

pub(crate) struct Scenario {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) kind: Kind,
    pub(crate) concurrency: usize,
    pub(crate) procs: usize,
    /// (side, target on A against that side).
    pub(crate) targets: Vec<(usize, Target)>,
}

pub(crate) fn scenarios() -> Vec<Scenario> {
    let mut v = Vec::new();
    let mut add = |kind, title: &str, concurrency, procs, targets: Vec<(usize, Target)>| {
        let id = format!(
            "{}-c{concurrency}{}",
            kind_id(kind),
            if procs > 1 {
                format!("-p{procs}")
            } else {
                String::new()
            }
        );
        v.push(Scenario {
            id,
            title: title.to_owned(),
            kind,
            concurrency,
            procs,
            targets,
        });
    };
    use Target::{CostAtMost as Cost, ThroughputAtLeast as Thr};
    // Issue 17: c=1 within 1.10× the same number of native round trips; at c=64
    // on one connection ≥ 0.85× (duplicate) and ≥ 0.70× (first call) of the
    // native floor, ≥ 1.2× / 1.3× the peers; the guard within its own round trips
    // by hand (F) as before.
    let dup1 = vec![(1, Cost(1.10))];
    let dup64 = vec![(1, Thr(0.85)), (3, Thr(1.2))];
    let first1 = vec![(1, Cost(1.10)), (5, Cost(1.10))];
    let first64 = vec![(1, Thr(0.70)), (3, Thr(1.3)), (4, Thr(1.3)), (5, Thr(0.90))];
    use Kind::*;
    add(RedisDuplicate, "Redis duplicate (replay)", 1, 1, dup1);
    add(
        RedisDuplicate,
        "Redis duplicate (replay)",
        64,
        1,
        dup64.clone(),
    );
    add(RedisDuplicate, "Redis duplicate (replay)", 32, 2, dup64);
    add(RedisFirst, "Redis first call", 1, 1, first1);
    add(RedisFirst, "Redis first call", 64, 1, first64.clone());
    add(RedisFirst, "Redis first call", 32, 2, first64);
    for c in [1, 64] {
        add(
            RedisWaitDuplicate,
            "Redis duplicate, WAIT 1",
            c,
            1,
            Vec::new(),
        );
        add(RedisWaitFirst, "Redis first call, WAIT 1", c, 1, Vec::new());
    }
    // The cluster rows (with `--cluster`): A against the floor and F only.
    add(
        ClusterDuplicate,
        "Redis Cluster duplicate (replay)",
        1,
        1,
        vec![(1, Cost(1.10))],
    );
    add(
        ClusterDuplicate,
        "Redis Cluster duplicate (replay)",
        64,
        1,
        vec![(1, Thr(0.85))],
    );
    add(
        ClusterFirst,
        "Redis Cluster first call",
        1,
        1,
        vec![(1, Cost(1.10)), (3, Cost(1.10))],
    );
    add(
        ClusterFirst,
        "Redis Cluster first call",
        64,
        1,
        vec![(1, Thr(0.70)), (3, Thr(0.90))],
    );
    let sql_target = vec![(1, Cost(1.15))];
    for db in [sql::Db::Postgres, sql::Db::MySql] {
        let name = db.name();
        add(
            SqlDuplicate(db),
            &format!("{name} store duplicate (replay)"),
            1,
            1,
            sql_target.clone(),
        );
        add(
            SqlDuplicate(db),
            &format!("{name} store duplicate (replay)"),
            64,
            1,
            sql_target.clone(),
        );
        add(
            SqlFirst(db),
            &format!("{name} store first call"),
            1,
            1,
            sql_target.clone(),
        );
        add(
            SqlFirst(db),
            &format!("{name} store first call"),
            64,
            1,
            sql_target.clone(),
        );
        add(
            Backstop(db),
            &format!("{name} backstop: unique violation + lookup"),
            1,
            1,
            sql_target.clone(),
        );
    }
    add(
        MemoryDuplicate,
        "memory store duplicate (CPU ceiling)",
        1,
        1,
        vec![(1, Cost(2.0))],
    );
    add(
        MemoryFirst,
        "memory store first call (CPU ceiling)",
        1,
        1,
        Vec::new(),
    );
    // The HTTP rows: A (idem's layer) against a bare handler (B) and the
    // peer (C). At c=64: first call and duplicate ≤ 1.15× the bare handler,
    // duplicate ≥ 1.2× the peer's throughput.
    for c in [1, 64] {
        let (first, dup) = if c == 64 {
            (vec![(1, Cost(1.15))], vec![(1, Cost(1.15)), (2, Thr(1.2))])
        } else {
            (Vec::new(), Vec::new())
        };
        add(HttpFirst, "HTTP first call (loopback)", c, 1, first);
        add(
            HttpDuplicate,
            "HTTP duplicate (replay, loopback)",
            c,
            1,
            dup,
        );
    }
    // Issue 29: Redis paths within 1.2× their floor, SQL paths within 1.15×,
    // and ahead of every peer (cost ≤ 1.00× theirs).
    let (redis_t, sql_t) = (vec![(1, Cost(1.20))], vec![(1, Cost(1.15))]);
    for c in [1, 64] {
        // At c=64: ≤ 1.15× the floor and ≥ 1.1× `rslock`'s throughput.
        let lock = if c == 64 {
            vec![(1, Cost(1.15)), (2, Thr(1.1))]
        } else {
            vec![(1, Cost(1.20)), (2, Cost(1.0))]
        };
        add(Lock, "lock acquire + release (Redis)", c, 1, lock);
        add(
            LockFenced,
            "lock acquire + release, fenced (Redis)",
            c,
            1,
            Vec::new(),
        );
        add(
            Token,
            "token issue + consume (Redis)",
            c,
            1,
            redis_t.clone(),
        );
        add(
            StateCas,
            "state check-and-set (Redis)",
            c,
            1,
            redis_t.clone(),
        );
        add(
            Transition,
            "#[state_transition] (PostgreSQL)",
            c,
            1,
            sql_t.clone(),
        );
        add(
            TxGuard,
            "transactional guard first call (PostgreSQL)",
            c,
            1,
            sql_t.clone(),
        );
    }
    // The macro within 1.05× the guard for the same call.
    use crate::macro_rows::On;
    for on in [On::Memory, On::Redis, On::Cluster, On::Postgres] {
        for replay in [true, false] {
            let what = if replay { "duplicate" } else { "first call" };
            let title = format!("#[idempotent] vs guard, {} {what}", on.name());
            for c in [1, 64] {
                add(Macro(on, replay), &title, c, 1, vec![(1, Cost(1.05))]);
            }
        }
    }
    for c in [1, 32] {
        add(
            ConsumeAmqp,
            "consume-once (RabbitMQ → PostgreSQL)",
            c,
            1,
            sql_t.clone(),
        );
        add(
            ConsumeNats,
            "consume-once (JetStream → PostgreSQL)",
            c,
            1,
            sql_t.clone(),
        );
    }
    v
}

pub(crate) fn kind_id(k: Kind) -> String {
    match k {
        Kind::RedisDuplicate => "redis-dup".into(),
        Kind::RedisFirst => "redis-first".into(),
        Kind::RedisWaitDuplicate => "redis-wait1-dup".into(),
        Kind::RedisWaitFirst => "redis-wait1-first".into(),
        Kind::ClusterDuplicate => "cluster-dup".into(),
        Kind::ClusterFirst => "cluster-first".into(),
        Kind::MemoryDuplicate => "memory-dup".into(),
        Kind::MemoryFirst => "memory-first".into(),
        Kind::Backstop(db) => format!("{}-backstop", db.id()),
        Kind::SqlDuplicate(db) => format!("{}-dup", db.id()),
        Kind::SqlFirst(db) => format!("{}-first", db.id()),
        Kind::HttpDuplicate => "http-dup".into(),
        Kind::HttpFirst => "http-first".into(),
        Kind::Lock => "lock".into(),
        Kind::LockFenced => "lock-fenced".into(),
        Kind::Token => "token".into(),
        Kind::StateCas => "state-cas".into(),
        Kind::Transition => "pg-transition".into(),
        Kind::TxGuard => "pg-txguard".into(),
        Kind::ConsumeAmqp => "amqp-consume".into(),
        Kind::ConsumeNats => "nats-consume".into(),
        Kind::Macro(on, true) => format!("macro-dup-{}", on.id()),
        Kind::Macro(on, false) => format!("macro-first-{}", on.id()),
    }
}
