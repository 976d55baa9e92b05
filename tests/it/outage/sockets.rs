//! The proxy's faults at the socket level, a cut and its recovery, and a slow
//! claim reply (issue 10 §A1, here through a real socket): a claim applied at
//! once whose reply comes late must not let a duplicate run beside its body.

use std::time::{Duration, Instant};

use idem::store::redis::RedisStore;
use idem::{Concurrency, Error, How, Idem};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Rig;
use crate::support::proxy::Proxy;
use crate::support::redis_server::RedisServer;
use crate::support::{Counter, unique_ns};

/// One `PING` on `s`; the time its `+PONG` took, or `None` if none came within
/// `within` (or the connection closed).
async fn ping(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    s.write_all(b"PING\r\n").await.ok()?;
    let mut buf = [0u8; 7];
    match tokio::time::timeout(within, s.read_exact(&mut buf)).await {
        Ok(Ok(_)) if &buf == b"+PONG\r\n" => Some(t0.elapsed()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_delays_black_holes_and_cuts() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    let mut s = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    let quick = ping(&mut s, Duration::from_secs(5)).await.expect("passes");

    proxy.delay(Duration::ZERO, Duration::from_millis(300));
    let slow = ping(&mut s, Duration::from_secs(5)).await.expect("delayed");
    assert!(slow >= Duration::from_millis(300), "{slow:?}");
    proxy.delay(Duration::ZERO, Duration::ZERO);

    // A black hole holds the request; the heal delivers it and its reply.
    proxy.black_hole();
    assert_eq!(ping(&mut s, Duration::from_millis(400)).await, None);
    proxy.heal();
    let mut buf = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut buf))
        .await
        .expect("delivered on heal")
        .unwrap();
    assert_eq!(&buf, b"+PONG\r\n");

    // A cut closes the connection and refuses new ones until the heal.
    proxy.cut();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    let mut again = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ping(&mut again, Duration::from_millis(500)).await, None);
    proxy.heal();
    let mut healed = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert!(ping(&mut healed, Duration::from_secs(5)).await.is_some());
    println!("ping {quick:?}, delayed {slow:?}");
}

/// A cut fails calls closed at once (the connection is refused, no timeout is
/// paid), and calls run again soon after the heal: the store reconnects and the
/// breaker probes one cooldown after it opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_fails_closed_and_recovers_after_the_heal() {
    let cooldown = Duration::from_millis(500);
    let rig = Rig::start(cooldown).await;
    let runs = Counter::default();
    let call = |id: String| {
        let runs = runs.clone();
        rig.idem
            .guard("cut", &[&id])
            .run(move || async move { Ok::<_, Error>(runs.hit()) })
    };
    assert_eq!(call("a".into()).await.unwrap().how(), How::Executed);
    rig.proxy.cut();
    let cut = Instant::now();
    for i in 0..10 {
        let r = call(format!("during-{i}")).await;
        assert!(matches!(r, Err(Error::StoreUnavailable { .. })), "{r:?}");
    }
    assert_eq!(runs.get(), 1, "no body runs while the store is cut off");
    tokio::time::sleep(Duration::from_millis(800).saturating_sub(cut.elapsed())).await;
    rig.proxy.heal();
    let healed = Instant::now();
    let mut refused = 0;
    let recovered = loop {
        match call(format!("after-{refused}")).await {
            Ok(o) => {
                assert_eq!(o.how(), How::Executed);
                break healed.elapsed();
            }
            Err(Error::StoreUnavailable { .. }) => refused += 1,
            Err(e) => panic!("{e:?}"),
        }
        assert!(
            healed.elapsed() < Duration::from_secs(10),
            "never recovered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("cut: heal -> first call through: {recovered:?} ({refused} refused meanwhile)");
    // One cooldown and a reconnection, with slack.
    assert!(
        recovered < cooldown + Duration::from_secs(3),
        "{recovered:?}"
    );
    assert_eq!(call("a".into()).await.unwrap().how(), How::Replayed);
}

/// The claim applies at once but its reply takes 700 ms (of a 1.5 s operation
/// budget); so do every renewal's. The lease counts from when each was sent, so
/// the body keeps its key for its whole 5 s run, past the 4.5 s lease: a
/// duplicate from another process, polling straight at the server, is refused
/// every time and replays once the body finished. The body runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_claim_replies_do_not_let_a_duplicate_run() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    let op_timeout = Duration::from_millis(1_500);
    let lease = op_timeout * 3;
    let ns = unique_ns("slow-reply");
    let handle = |url: String| {
        let ns = ns.clone();
        async move {
            Idem::builder()
                .store(RedisStore::connect(&url).await.unwrap())
                .namespace(ns)
                .op_timeout(op_timeout)
                .build()
                .unwrap()
        }
    };
    let slow = handle(proxy.redis_url()).await;
    let direct = handle(server.url()).await;
    proxy.delay(Duration::ZERO, Duration::from_millis(700));
    let runs = Counter::default();
    let call = |idem: &Idem, body: Duration| {
        let (runs, idem) = (runs.clone(), idem.clone());
        async move {
            idem.guard("slow", &[&"k"])
                .lease(lease)
                .concurrent(Concurrency::Reject)
                .run(move || async move {
                    let n = runs.hit();
                    tokio::time::sleep(body).await;
                    Ok::<_, Error>(n)
                })
                .await
        }
    };
    let first = {
        let slow = slow.clone();
        let call = call(&slow, Duration::from_secs(5));
        tokio::spawn(call)
    };
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut refused = 0;
    while t0.elapsed() < Duration::from_millis(5_000) {
        match call(&direct, Duration::ZERO).await {
            Err(Error::InProgress { .. }) => refused += 1,
            other => panic!("a duplicate got {other:?} at {:?}", t0.elapsed()),
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let first = first.await.unwrap().unwrap();
    assert_eq!((first.how(), *first.value()), (How::Executed, 1));
    let again = call(&direct, Duration::ZERO).await.unwrap();
    assert_eq!((again.how(), *again.value()), (How::Replayed, 1));
    assert_eq!(runs.get(), 1, "the body ran beside itself");
    assert!(
        refused > 10,
        "the duplicate was refused while the body ran: {refused}"
    );
}
