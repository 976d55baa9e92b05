//! A fault-injecting TCP proxy on loopback, for network outages in tests: it sits
//! between a client (a `RedisStore`) and a test-owned server and can
//! - delay the bytes of each direction (`delay`): every chunk is delivered its
//!   delay after it was read, order kept, as a slow link would;
//! - black-hole the link (`black_hole`): connections stay open, nothing is
//!   delivered in either direction, and everything held is delivered on `heal`
//!   (a stalled route or a partition that resolves: replies arrive late);
//! - cut it (`cut`): every open connection is closed at once, and new ones are
//!   closed as soon as they are accepted, until `heal`.
//!
//! Test code only: it binds 127.0.0.1 and forwards to a 127.0.0.1 port.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What the link does now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Faults {
    /// Client to server.
    up_delay: Duration,
    /// Server to client (the replies).
    down_delay: Duration,
    black_hole: bool,
    cut: bool,
    /// Bumped by every `cut`: connections opened before it close.
    epoch: u64,
}

/// The proxy; it stops (and drops its connections) when dropped.
#[derive(Debug)]
pub struct Proxy {
    port: u16,
    faults: Arc<watch::Sender<Faults>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on a spare loopback port and forwards to `127.0.0.1:upstream`.
    pub async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(watch::Sender::new(Faults::default()));
        let f = Arc::clone(&faults);
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let now = *f.borrow();
                if now.cut {
                    drop(client); // refused while cut
                    continue;
                }
                let rx = f.subscribe();
                conns.spawn(connection(client, upstream, now.epoch, rx));
                while conns.try_join_next().is_some() {}
            }
        });
        Proxy { port, faults, task }
    }

    /// The URL a Redis client uses to go through the proxy.
    pub fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Delays each direction's chunks by this much (zero: none).
    pub fn delay(&self, up: Duration, down: Duration) {
        self.faults.send_modify(|f| {
            f.up_delay = up;
            f.down_delay = down;
        });
    }

    /// Holds every byte in both directions until [`heal`](Self::heal).
    pub fn black_hole(&self) {
        self.faults.send_modify(|f| f.black_hole = true);
    }

    /// Closes every connection now and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self) {
        self.faults.send_modify(|f| {
            f.cut = true;
            f.epoch += 1;
        });
    }

    /// Ends a black hole (delivering what it held) or a cut; delays stay.
    pub fn heal(&self) {
        self.faults.send_modify(|f| {
            f.black_hole = false;
            f.cut = false;
        });
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One client connection: two pumps, each a reader that stamps chunks and a
/// writer that delivers them when the faults allow. Ends on EOF, an error or a cut.
async fn connection(client: TcpStream, upstream: u16, epoch: u64, faults: watch::Receiver<Faults>) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let mut cut = faults.clone();
    let pumps = async {
        tokio::join!(
            pump(cr, sw, faults.clone(), true),
            pump(sr, cw, faults.clone(), false)
        )
    };
    tokio::select! {
        _ = pumps => {}
        _ = cut.wait_for(|f| f.epoch != epoch) => {} // dropping both sockets closes them
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    faults: watch::Receiver<Faults>,
    up: bool,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    };
    let writer = async move {
        let mut faults = faults;
        while let Some((read_at, chunk)) = rx.recv().await {
            loop {
                let f = *faults.borrow_and_update();
                if f.black_hole {
                    if faults.changed().await.is_err() {
                        return;
                    }
                    continue;
                }
                let due = read_at + if up { f.up_delay } else { f.down_delay };
                if Instant::now() >= due {
                    break;
                }
                // A fault that starts while the chunk waits applies to it too.
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    r = faults.changed() => if r.is_err() { return },
                }
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    // The reader ends first on EOF; the writer then drains what was read.
    tokio::join!(reader, writer);
}
