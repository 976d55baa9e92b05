//! Broker fixtures of the outbox tests: fresh JetStream streams with a
//! durable pull consumer (deleted on drop), a `nats-server` of the test's own
//! (spare port, JetStream in a temp dir, killed by PID on drop) for restarts,
//! and the URLs of the shared brokers. RabbitMQ queues come from the consume
//! tests' `TestQueue`.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull, stream};

use crate::support::tempdir::TempDir;

pub(crate) fn nats_url() -> String {
    std::env::var("IDEM_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

pub(crate) async fn nats_client(url: &str) -> async_nats::Client {
    async_nats::connect(url)
        .await
        .unwrap_or_else(|e| panic!("NATS at {url} is required: {e}"))
}

/// A fresh stream over `<prefix>>` with the durable pull consumer `outbox-it`.
pub(crate) struct TestStream {
    pub(crate) name: String,
    /// The subject prefix the relay publishes under.
    pub(crate) prefix: String,
    url: String,
}

impl TestStream {
    /// `max_msg_size`: a stream limit (poison test); `None`: the server's.
    pub(crate) async fn new(url: &str, max_msg_size: Option<i32>) -> TestStream {
        let js = jetstream::new(nats_client(url).await);
        let sfx = uuid::Uuid::new_v4().simple().to_string();
        let t = TestStream {
            name: format!("IDEM_OB_{sfx}"),
            prefix: format!("idem.ob.{sfx}."),
            url: url.to_owned(),
        };
        let s = js
            .create_stream(stream::Config {
                name: t.name.clone(),
                subjects: vec![format!("{}>", t.prefix)],
                max_message_size: max_msg_size.unwrap_or(-1),
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .expect("create stream");
        s.create_consumer(pull::Config {
            durable_name: Some("outbox-it".into()),
            ack_wait: Duration::from_secs(10),
            max_deliver: 20,
            max_ack_pending: 1024,
            ..Default::default()
        })
        .await
        .expect("create consumer");
        t
    }

    /// Messages the stream holds.
    pub(crate) async fn messages(&self, url: &str) -> u64 {
        let js = jetstream::new(nats_client(url).await);
        js.get_stream(&self.name)
            .await
            .unwrap()
            .info()
            .await
            .unwrap()
            .state
            .messages
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        let (name, url) = (self.name.clone(), self.url.clone());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    if let Ok(c) = async_nats::connect(&url).await {
                        let _ = jetstream::new(c).delete_stream(&name).await;
                    }
                })
        })
        .join();
    }
}

/// A `nats-server -js` of this test's own, on a spare port, its JetStream
/// store in a temp dir that survives restarts; killed on drop.
pub(crate) struct NatsServer {
    pub(crate) port: u16,
    dir: TempDir,
    child: Option<std::process::Child>,
}

impl NatsServer {
    pub(crate) fn start() -> NatsServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = NatsServer {
            port,
            dir: TempDir::new(),
            child: None,
        };
        s.spawn();
        s
    }

    pub(crate) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = std::process::Command::new("/usr/sbin/nats-server")
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start /usr/sbin/nats-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL, by its PID).
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and store.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where a test's messages go: a fresh RabbitMQ queue (the topic is its
/// name, through the default exchange) or a fresh JetStream stream (topic
/// `orders` under its prefix).
pub(crate) enum Target {
    Rabbit(crate::consume::amqp_support::TestQueue, String),
    Nats(TestStream),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Broker {
    Rabbit,
    Nats,
}

impl Target {
    /// On the shared broker.
    pub(crate) async fn new(broker: Broker) -> Target {
        match broker {
            Broker::Rabbit => Self::rabbit(crate::consume::amqp_support::amqp_url()).await,
            Broker::Nats => Target::Nats(TestStream::new(&nats_url(), None).await),
        }
    }

    /// A queue on the shared RabbitMQ, reached by the relay and the consumer
    /// through `url` (a proxy's, for outages).
    pub(crate) async fn rabbit(url: String) -> Target {
        let (conn, ch) = crate::consume::amqp_support::channel().await;
        let q = crate::consume::amqp_support::TestQueue::new(&ch, false).await;
        let _ = conn.close(200, "bye".into()).await;
        Target::Rabbit(q, url)
    }

    pub(crate) fn broker(&self) -> &'static str {
        match self {
            Target::Rabbit(..) => "rabbitmq",
            Target::Nats(_) => "nats",
        }
    }

    pub(crate) fn topic(&self) -> String {
        match self {
            Target::Rabbit(q, _) => q.name.clone(),
            Target::Nats(_) => "orders".into(),
        }
    }

    /// A relay of `store`'s outbox to this target.
    pub(crate) async fn relay(
        &self,
        store: idem::store::sql::SqlStore,
        opts: idem::outbox::RelayOptions,
    ) -> idem::outbox::Relay {
        match self {
            Target::Rabbit(_, url) => idem::outbox::Relay::new(
                store,
                idem::outbox::amqp::AmqpPublisher::new(url.clone()),
                opts,
            ),
            Target::Nats(s) => {
                let p = idem::outbox::nats::NatsPublisher::new(nats_client(&s.url).await)
                    .subject_prefix(s.prefix.clone());
                idem::outbox::Relay::new(store, p, opts)
            }
        }
    }

    /// Consumes with `#[consume_once]` until `expected` effects were applied
    /// and deliveries stopped; the loop's counters.
    pub(crate) async fn consume(
        &self,
        db: std::sync::Arc<crate::consume::support::LogDb>,
        idem: std::sync::Arc<idem::Idem>,
        expected: i64,
        limit: Duration,
    ) -> std::sync::Arc<idem::consume::Counters> {
        let mut opts = idem::consume::ConsumerOptions::new("outbox-it");
        opts.prefetch = 128;
        opts.concurrency = 8;
        let counters = opts.counters.clone();
        let (stop, signal) = idem::consume::shutdown();
        let watch = crate::outbox::support::stop_when_applied(
            db.clone(),
            counters.clone(),
            stop,
            expected,
            Duration::from_millis(700),
            limit,
        );
        let handler = {
            let pool = db.pg().clone();
            move |d| crate::outbox::support::handle(pool.clone(), idem.clone(), d)
        };
        match self {
            Target::Rabbit(q, _) => {
                let url = crate::consume::amqp_support::amqp_url();
                idem::consume::amqp::run(&url, &q.name, opts, signal, handler).await
            }
            Target::Nats(s) => {
                let c = nats_client(&s.url).await;
                idem::consume::nats::run(c, &s.name, "outbox-it", opts, signal, handler).await
            }
        }
        watch.await.expect("the consumer watch");
        counters
    }
}
