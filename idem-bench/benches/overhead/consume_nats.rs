//! Consume-once on NATS JetStream (see [`crate::consume`]): a fresh stream
//! with one durable pull consumer per side; messages published with core
//! `publish` (no publish ack awaited) and a `Nats-Msg-Id` header.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::PullConsumer, consumer::pull, stream};
use futures_util::StreamExt as _;

use crate::Env;
use crate::consume::{
    CONCURRENCY, Consumer, Created, PREFETCH, Stop, created, nats_url, pair, publish_and_wait,
};
use crate::harness::{Op, Side};

const HEADER: &str = idem::consume::nats::MSG_ID_HEADER;

async fn client() -> anyhow::Result<async_nats::Client> {
    let url = nats_url();
    async_nats::connect(&url)
        .await
        .map_err(|e| anyhow::anyhow!("NATS at {url} is required: {e}"))
}

/// A stream on `subject` with a durable pull consumer `bench`.
async fn stream(js: &jetstream::Context, name: &str, subject: &str) -> anyhow::Result<()> {
    let s = js
        .create_stream(stream::Config {
            name: name.to_owned(),
            subjects: vec![subject.to_owned()],
            ..Default::default()
        })
        .await?;
    created(Created::Stream(name.to_owned()));
    s.create_consumer(pull::Config {
        durable_name: Some("bench".into()),
        ack_wait: Duration::from_secs(30),
        max_ack_pending: i64::from(PREFETCH) * 4,
        ..Default::default()
    })
    .await?;
    Ok(())
}

fn side(client: &async_nats::Client, c: &Consumer, subject: String, stop: Arc<Stop>) -> Op {
    let client = client.clone();
    publish_and_wait(c.waiters.clone(), subject.clone(), stop, move |id| {
        let (client, subject) = (client.clone(), subject.clone());
        async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(HEADER, id.as_str());
            client
                .publish_with_headers(subject, headers, bytes::Bytes::from_static(b"{}"))
                .await?;
            Ok(())
        }
    })
}

pub(crate) async fn sides(env: &Env) -> anyhow::Result<Vec<Side>> {
    let consumer = Consumer::new(env).await?;
    let client = client().await?;
    let js = jetstream::new(client.clone());
    let base = format!("IDEM_BENCH_{}_{}", env.ns, env.tag).replace(['-', '.'], "_");
    let (sa, sb) = (format!("{base}_A"), format!("{base}_B"));
    let (ja, jb) = (
        format!("idem.bench.{base}.a"),
        format!("idem.bench.{base}.b"),
    );
    stream(&js, &sa, &ja).await?;
    stream(&js, &sb, &jb).await?;
    let a = {
        let (stop, signal) = idem::consume::shutdown();
        let mut opts = idem::consume::ConsumerOptions::new("bench-a");
        opts.prefetch = PREFETCH;
        opts.concurrency = CONCURRENCY;
        let (c, cl) = (consumer.clone(), client.clone());
        tokio::spawn(async move {
            idem::consume::nats::run(cl, &sa, "bench", opts, signal, move |d| {
                let c = c.clone();
                async move { c.through_idem(d.id).await }
            })
            .await;
        });
        side(&client, &consumer, ja, Stop::new(move || stop.trigger()))
    };
    let b = {
        let (stop, rx) = Stop::channel();
        let pull: PullConsumer = js
            .get_stream(&sb)
            .await?
            .get_consumer("bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        tokio::spawn(floor(pull, consumer.clone(), rx));
        side(&client, &consumer, jb, stop)
    };
    Ok(pair(a, b, "nats"))
}

/// The hand-written loop: pull batches of `PREFETCH`, at most `CONCURRENCY`
/// handlers, ack after the commit. Ends when `stop` turns true.
async fn floor(
    pull: PullConsumer,
    c: Consumer,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut messages = pull
        .stream()
        .max_messages_per_batch(usize::from(PREFETCH))
        .messages()
        .await?;
    let slots = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    loop {
        let slot = slots.clone().acquire_owned().await?;
        let m = tokio::select! {
            m = messages.next() => m,
            _ = stop.wait_for(|s| *s) => break,
        };
        let Some(m) = m else { break };
        let m = m.map_err(|e| anyhow::anyhow!("{e}"))?;
        let c = c.clone();
        tokio::spawn(async move {
            let id = m
                .headers
                .as_ref()
                .and_then(|h| h.get(HEADER))
                .map(|v| v.as_str().to_owned());
            match c.by_hand(id).await {
                Ok(()) => {
                    let _ = m.ack().await;
                }
                Err(e) => eprintln!("bench floor consumer: {e}"),
            }
            drop(slot);
        });
    }
    Ok(())
}

/// Deletes the run's streams (their consumers go with them).
pub(crate) async fn delete(streams: &[Created]) -> anyhow::Result<()> {
    let js = jetstream::new(client().await?);
    for s in streams {
        if let Created::Stream(name) = s {
            js.delete_stream(name).await?;
        }
    }
    Ok(())
}
