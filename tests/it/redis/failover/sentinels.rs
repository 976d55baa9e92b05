//! A Sentinel deployment of test-owned processes: a primary, two replicas and
//! three sentinels (`redis-server --sentinel`, quorum 2, `down-after-milliseconds`
//! 1000) on spare loopback ports, every process stopped by PID when dropped.
//!
//! [`SentinelSet::lag`] makes the replicas miss writes the primary acknowledges:
//! SIGSTOP alone is not enough (the kernel keeps filling a stopped replica's
//! socket and the replica catches up on SIGCONT), so the primary also drops its
//! replica links (`CLIENT KILL TYPE replica`). Writes acknowledged after that
//! live on the primary only; [`SentinelSet::crash_primary`] then SIGKILLs it and
//! thaws the replica that is to be promoted without them.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::redis_server::{RedisServer, cli};

/// The name the sentinels monitor the primary under.
pub(crate) const MASTER: &str = "idem-primary";

/// One `redis-server --sentinel` process.
pub(crate) struct SentinelProc {
    child: Child,
    pub(crate) port: u16,
    dir: std::path::PathBuf,
}

impl SentinelProc {
    pub(crate) fn start(primary: u16) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a spare port")
            .port();
        let dir = std::env::temp_dir().join(format!(
            "idem-sentinel-{port}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                 sentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                 sentinel down-after-milliseconds {MASTER} 1000\n\
                 sentinel failover-timeout {MASTER} 4000\n\
                 sentinel parallel-syncs {MASTER} 2\n",
                dir = dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed to run the Sentinel tests");
        let s = SentinelProc { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cli(port, &["PING"]).contains("PONG") {
            assert!(Instant::now() < deadline, "sentinel on {port} not up");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// `host:port`, as the store takes it.
    pub(crate) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for SentinelProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A primary, two replicas and three sentinels.
pub(crate) struct SentinelSet {
    /// `nodes[0]` starts as the primary, `nodes[1..]` as its replicas.
    pub(crate) nodes: Vec<RedisServer>,
    pub(crate) sentinels: Vec<SentinelProc>,
    /// This set's turn among the drills (see [`super::turn`]).
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl SentinelSet {
    /// Starts everything and waits until every sentinel sees both replicas and
    /// the other two sentinels (so a failover can be authorised).
    pub(crate) fn start(turn: tokio::sync::MutexGuard<'static, ()>) -> Self {
        let primary = RedisServer::start();
        let port = primary.port.to_string();
        let mut nodes = vec![primary];
        for _ in 0..2 {
            nodes.push(RedisServer::start_with(&[
                "--replicaof",
                "127.0.0.1",
                &port,
            ]));
        }
        let sentinels = (0..3).map(|_| SentinelProc::start(nodes[0].port)).collect();
        let set = SentinelSet {
            nodes,
            sentinels,
            _turn: turn,
        };
        set.wait_synced(&set.nodes[0], 2);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !set.sentinels.iter().all(|s| {
            let m = cli(s.port, &["SENTINEL", "MASTER", MASTER]);
            field(&m, "num-slaves") == Some(2) && field(&m, "num-other-sentinels") == Some(2)
        }) {
            assert!(Instant::now() < deadline, "sentinels did not meet in 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        set
    }

    /// The sentinels' addresses.
    pub(crate) fn addrs(&self) -> Vec<String> {
        self.sentinels.iter().map(SentinelProc::addr).collect()
    }

    /// The `redis+sentinel://` URL of the set.
    pub(crate) fn url(&self) -> String {
        format!("redis+sentinel://{}/{MASTER}", self.addrs().join(","))
    }

    /// Waits until `primary` reports `n` replicas online.
    pub(crate) fn wait_synced(&self, primary: &RedisServer, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = primary.cli(&["INFO", "replication"]);
            if info.matches("state=online").count() >= n {
                return;
            }
            assert!(Instant::now() < deadline, "{n} replicas not online: {info}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every replica of the primary has acknowledged its whole
    /// replication stream (`offset=` of each replica line equals
    /// `master_repl_offset`).
    pub(crate) fn caught_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = self.nodes[0].cli(&["INFO", "replication"]);
            let master = info
                .lines()
                .find_map(|l| l.strip_prefix("master_repl_offset:"))
                .map(str::trim)
                .unwrap_or("?")
                .to_owned();
            let replicas: Vec<&str> = info
                .lines()
                .filter(|l| l.starts_with("slave"))
                .filter_map(|l| l.split(',').find_map(|f| f.strip_prefix("offset=")))
                .collect();
            if replicas.len() == 2 && replicas.iter().all(|o| *o == master) {
                return;
            }
            assert!(Instant::now() < deadline, "replicas not caught up: {info}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The replicas stop receiving writes: SIGSTOP `frozen` of them, then the
    /// primary drops every replica link (a replica still running reconnects
    /// and catches up; a frozen one cannot).
    pub(crate) fn lag(&self, frozen: &[usize]) {
        for &i in frozen {
            self.nodes[i].freeze();
        }
        self.nodes[0].cli(&["CLIENT", "KILL", "TYPE", "replica"]);
    }

    /// SIGKILLs the primary and thaws `promote`; returns when the sentinels
    /// name it the primary and it takes writes.
    pub(crate) fn crash_primary(&mut self, promote: usize) -> Duration {
        let t0 = Instant::now();
        self.nodes[0].kill();
        self.nodes[promote].thaw();
        let port = self.nodes[promote].port.to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let named: Vec<String> = self
                .sentinels
                .iter()
                .map(|s| cli(s.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER]))
                .collect();
            let role = self.nodes[promote].cli(&["ROLE"]);
            if named
                .iter()
                .all(|n| n.lines().nth(1) == Some(port.as_str()))
                && role.starts_with("master")
            {
                return t0.elapsed();
            }
            assert!(Instant::now() < deadline, "no promotion in 30 s: {named:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl SentinelSet {
    /// A fresh replica of `nodes[primary]` joins (the crashed primary's
    /// replacement); the sentinels learn of it from the primary.
    pub(crate) fn add_replica(&mut self, primary: usize) {
        let port = self.nodes[primary].port.to_string();
        self.nodes.push(RedisServer::start_with(&[
            "--replicaof",
            "127.0.0.1",
            &port,
        ]));
    }
}

/// A numeric field of a `SENTINEL MASTER` reply (`redis-cli` prints names and
/// values on alternate lines).
fn field(reply: &str, name: &str) -> Option<u64> {
    let mut lines = reply.lines();
    while let Some(l) = lines.next() {
        if l == name {
            return lines.next()?.trim().parse().ok();
        }
    }
    None
}
