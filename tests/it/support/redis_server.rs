//! Test-owned `redis-server` processes (single nodes and a 3-master cluster) on
//! spare loopback ports, killed when dropped, and helpers for the shared Redis on
//! 127.0.0.1:6379. Everything fails loudly when Redis is not installed or running.

#![allow(dead_code)]

mod cluster;
pub(crate) use cluster::{RedisCluster, process_cluster};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shared Redis every test may use (with its own key prefix).
pub(crate) const SHARED_URL: &str = "redis://127.0.0.1:6379";

/// A fresh key prefix on the shared Redis; its keys are deleted on drop.
#[derive(Debug)]
pub(crate) struct SharedPrefix(pub(crate) String);

impl SharedPrefix {
    pub(crate) fn new() -> Self {
        // Fail loudly if the shared server is missing.
        let pong = cli(6379, &["PING"]);
        assert_eq!(
            pong.trim(),
            "PONG",
            "shared Redis at 127.0.0.1:6379 is not answering"
        );
        SharedPrefix(format!("idemtest:{}:", uuid::Uuid::new_v4().simple()))
    }
}

impl Drop for SharedPrefix {
    fn drop(&mut self) {
        let keys = cli(6379, &["--scan", "--pattern", &format!("{}*", self.0)]);
        for chunk in keys
            .lines()
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .chunks(200)
        {
            let mut args = vec!["DEL"];
            args.extend(chunk.iter().copied());
            cli(6379, &args);
        }
    }
}

/// Runs `redis-cli -p port args...` and returns its stdout.
pub(crate) fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("redis-cli must be installed to run the Redis tests");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A port that is free now (and, for cluster nodes, whose bus port +10000 is too).
fn spare_port(cluster: bool) -> u16 {
    for _ in 0..200 {
        let p = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if cluster && (p > 55_000 || !port_free(p + 10_000)) {
            continue;
        }
        return p;
    }
    panic!("no spare loopback port found");
}

/// One `redis-server` process owned by the test.
#[derive(Debug)]
pub(crate) struct RedisServer {
    child: Option<Child>,
    pub(crate) port: u16,
    dir: PathBuf,
    args: Vec<String>,
}

impl RedisServer {
    /// A throwaway server: no persistence, `noeviction`.
    pub(crate) fn start() -> Self {
        Self::start_with(&[])
    }

    /// A throwaway server with extra `redis-server` arguments.
    pub(crate) fn start_with(extra: &[&str]) -> Self {
        Self::start_inner(extra, false)
    }

    fn start_inner(extra: &[&str], cluster: bool) -> Self {
        let mut last_err = String::new();
        for _ in 0..5 {
            let port = spare_port(cluster);
            let dir = std::env::temp_dir().join(format!(
                "idem-redis-{port}-{}",
                uuid::Uuid::new_v4().simple()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let mut s = RedisServer {
                child: None,
                port,
                dir,
                args: extra.iter().map(|s| (*s).to_owned()).collect(),
            };
            match s.spawn() {
                Ok(()) => return s,
                Err(e) => last_err = e,
            }
        }
        panic!("could not start redis-server: {last_err}");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = Command::new("redis-server")
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed to run the Redis tests");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!(
                    "redis-server on port {} exited: {status}",
                    self.port
                ));
            }
            if ping(self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "redis-server on port {} not ready in 10 s",
            self.port
        ))
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A handle on this server alone (a fresh `RedisStore`), in `namespace`.
    pub(crate) async fn handle(&self, namespace: &str) -> idem::Idem {
        let store = idem::store::redis::RedisStore::connect(&self.url())
            .await
            .unwrap();
        idem::Idem::builder()
            .store(store)
            .namespace(namespace)
            .build()
            .unwrap()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("server not running").id()
    }

    /// SIGKILL, as a crash.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port (empty: no persistence).
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn().expect("restart redis-server");
    }

    /// SIGSTOP: the server hangs with its sockets open.
    pub(crate) fn freeze(&self) {
        signal(self.pid(), "-STOP");
    }

    /// SIGCONT.
    pub(crate) fn thaw(&self) {
        signal(self.pid(), "-CONT");
    }

    pub(crate) fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }

    /// For servers that are never dropped: a watchdog kills the server (and
    /// removes its directory) once this test process is gone.
    pub(crate) fn die_with_this_process(&self) {
        let script = format!(
            "while kill -0 {me} 2>/dev/null; do sleep 0.5; done; kill -9 {pid} 2>/dev/null; rm -rf '{dir}'",
            me = std::process::id(),
            pid = self.pid(),
            dir = self.dir.display()
        );
        // Deliberately never waited for: it must outlive this process (init reaps it).
        #[allow(clippy::zombie_processes)]
        let _watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn watchdog");
    }
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "kill {sig} {pid} failed");
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            // A frozen server must be thawed to die cleanly.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(c.id().to_string())
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// Counts the commands clients send to a server through `MONITOR`: their round
/// trips ([`take`](Self::take)), or those and the commands their scripts run
/// ([`take_with_scripts`](Self::take_with_scripts)), the server's own work.
pub(crate) struct Monitor {
    reader: BufReader<TcpStream>,
    port: u16,
    seq: u32,
}

impl Monitor {
    pub(crate) fn attach(port: u16) -> Self {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"MONITOR\r\n").unwrap();
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "+OK");
        Monitor {
            reader,
            port,
            seq: 0,
        }
    }

    /// The client commands executed since the last call (or since attaching),
    /// as their names. Uses an `ECHO` marker from another connection as the fence.
    pub(crate) fn take(&mut self) -> Vec<String> {
        self.collect(false)
    }

    /// [`take`](Self::take), with each command a script ran after the script's
    /// own `EVALSHA`, named `lua:<NAME>`.
    pub(crate) fn take_with_scripts(&mut self) -> Vec<String> {
        self.collect(true)
    }

    fn collect(&mut self, scripts: bool) -> Vec<String> {
        self.seq += 1;
        let marker = format!("idem-monitor-marker-{}", self.seq);
        cli(self.port, &["ECHO", &marker]);
        let mut cmds = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("MONITOR stream");
            if line.contains(&marker) {
                return cmds;
            }
            let Some(name) = line.split('"').nth(1) else {
                continue;
            };
            let name = name.to_ascii_uppercase();
            if !line.contains(" lua]") {
                cmds.push(name);
            } else if scripts {
                cmds.push(format!("lua:{name}"));
            } // else: a command run by a script, not a round trip
        }
    }
}
