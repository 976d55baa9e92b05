//! The model broker of the outbox simulation: an in-process implementation
//! of the public `idem::outbox::Publisher` trait, one handle per relay
//! process, sharing one log.
//!
//! Per message it answers as a JetStream stream would: no stream captures
//! the topic (`outbox::UNCAPTURED`), the payload is over the size limit, a
//! seeded nack, or stored (a repeated id is stored again, flagged duplicate,
//! as a broker without a duplicate window would) with, seeded, its
//! confirmation lost. During a down window it refuses connections or stays
//! silent until the relay's publish timeout. Seeded choices hash the seed,
//! the message id and how often this id was published, so they do not
//! depend on how the relays interleave. How those answers become the
//! relay's verdicts is the broker adapter's judgement ([`verdicts`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::outbox::{BrokerDown, Confirmed, Outgoing, PublishResult, Publisher, Verdict};
use idem::store::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use super::outbox::{SIZE_LIMIT, TOPICS, UNCAPTURED};
use crate::sim::rng::Rng;

/// A window in which the broker cannot be used.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Down {
    pub(crate) from_ms: u64,
    pub(crate) to_ms: u64,
    /// No answer at all (the relay's publish timeout ends the call), rather
    /// than a refused connection.
    pub(crate) silent: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct BrokerSpec {
    pub(crate) nack_pct: u64,
    pub(crate) lost_ack_pct: u64,
    pub(crate) downs: Vec<Down>,
}

impl BrokerSpec {
    pub(crate) fn generate(r: &mut Rng) -> BrokerSpec {
        let nack_pct = [0, 0, 10, 25][r.range(0, 3) as usize];
        let lost_ack_pct = if r.chance(40) { 10 } else { 0 };
        let downs = (0..r.range(0, 2))
            .map(|_| {
                let from_ms = r.range(0, 500);
                Down {
                    from_ms,
                    to_ms: from_ms + r.range(50, 300),
                    silent: r.chance(50),
                }
            })
            .collect();
        BrokerSpec {
            nack_pct,
            lost_ack_pct,
            downs,
        }
    }
}

/// The broker's own answer about one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    Stored {
        duplicate: bool,
    },
    /// Stored, but its confirmation never reaches the relay.
    StoredLostAck {
        duplicate: bool,
    },
    /// No stream captures the subject ("no responders").
    NoStream,
    Refused(String),
}

/// How a publish call ended.
#[derive(Debug, Clone)]
pub(crate) enum CallEnd {
    /// Every message answered; what the relay was told.
    Answered(Vec<Answer>, String),
    /// A down window: the connection was refused, or nothing answered.
    Down { silent: bool },
    /// The relay crashed inside the call, after the first `stored` messages.
    Crashed { stored: usize },
}

#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) at: Duration,
    pub(crate) relay: (usize, u32),
    pub(crate) ids: Vec<String>,
    pub(crate) end: CallEnd,
}

/// A message the broker stored (every time it stored it).
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) at: Duration,
    pub(crate) id: String,
    pub(crate) topic: String,
    pub(crate) business_id: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) duplicate: bool,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct BrokerLog {
    pub(crate) calls: Vec<Call>,
    pub(crate) stored: Vec<Stored>,
    /// Per message id: refusals the relay was told of (its attempts).
    pub(crate) refusals_told: HashMap<String, u32>,
    /// Per message id: how often it was offered (the seeded choices' input).
    offered: HashMap<String, u64>,
    /// Per relay incarnation: publish calls so far.
    calls_by: HashMap<(usize, u32), u32>,
}

/// A relay crashed inside a publish call: which one, and what it was
/// publishing.
#[derive(Debug)]
pub(crate) struct CrashNote {
    pub(crate) relay: (usize, u32),
    pub(crate) at: Duration,
    pub(crate) ids: Vec<String>,
}

pub(crate) struct Broker {
    pub(crate) seed: u64,
    pub(crate) t0: Instant,
    pub(crate) spec: BrokerSpec,
    /// Per relay incarnation: its crash (call number, messages stored).
    pub(crate) crashes: HashMap<(usize, u32), (u32, usize)>,
    pub(crate) notes: UnboundedSender<CrashNote>,
    pub(crate) log: Mutex<BrokerLog>,
}

fn hash(seed: u64, id: &str, n: u64, salt: u64) -> u64 {
    let mut h = seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in id.bytes().chain(n.to_le_bytes()) {
        h = Rng::new(h ^ u64::from(b)).next_u64();
    }
    h
}

impl Broker {
    /// The broker's answer about `m` (and it stores `m` when it takes it).
    fn offer(&self, log: &mut BrokerLog, m: &Outgoing<'_>, at: Duration) -> Answer {
        let n = log.offered.entry(m.id.to_owned()).or_default();
        *n += 1;
        let n = *n;
        if m.topic == TOPICS[UNCAPTURED] {
            return Answer::NoStream;
        }
        if m.payload.len() > SIZE_LIMIT {
            return Answer::Refused("maximum message size exceeded".into());
        }
        if hash(self.seed, m.id, n, 1) % 100 < self.spec.nack_pct {
            return Answer::Refused("nack".into());
        }
        let duplicate = log.stored.iter().any(|s| s.id == m.id);
        log.stored.push(Stored {
            at,
            id: m.id.to_owned(),
            topic: m.topic.to_owned(),
            business_id: m.business_id.to_owned(),
            payload: m.payload.to_vec(),
            duplicate,
        });
        if hash(self.seed, m.id, n, 2) % 100 < self.spec.lost_ack_pct {
            Answer::StoredLostAck { duplicate }
        } else {
            Answer::Stored { duplicate }
        }
    }

    async fn publish(
        &self,
        relay: (usize, u32),
        batch: &[Outgoing<'_>],
    ) -> Result<PublishResult, BrokerDown> {
        let at = self.t0.elapsed();
        let ids: Vec<String> = batch.iter().map(|m| m.id.to_owned()).collect();
        let ms = at.as_millis() as u64;
        let down = self
            .spec
            .downs
            .iter()
            .find(|d| d.from_ms <= ms && ms < d.to_ms)
            .copied();
        let (result, crashed) = {
            let mut log = self.log.lock().expect("the broker log");
            let k = log.calls_by.entry(relay).or_default();
            *k += 1;
            let crash = self.crashes.get(&relay).filter(|c| c.0 == *k).copied();
            if let Some(d) = down {
                log.calls.push(Call {
                    at,
                    relay,
                    ids,
                    end: CallEnd::Down { silent: d.silent },
                });
                if !d.silent {
                    return Err(BrokerDown("connection refused".into()));
                }
                (None, false)
            } else if let Some((_, stored)) = crash {
                let stored = stored.min(batch.len());
                for m in &batch[..stored] {
                    self.offer(&mut log, m, at);
                }
                log.calls.push(Call {
                    at,
                    relay,
                    ids: ids.clone(),
                    end: CallEnd::Crashed { stored },
                });
                (None, true)
            } else {
                let answers: Vec<Answer> =
                    batch.iter().map(|m| self.offer(&mut log, m, at)).collect();
                let told = verdicts(&answers);
                if let Ok(v) = &told {
                    for (id, refused) in ids.iter().zip(refusals(v)) {
                        if refused {
                            *log.refusals_told.entry(id.clone()).or_default() += 1;
                        }
                    }
                }
                let what = match &told {
                    Ok(v) => format!("{v:?}"),
                    Err(e) => format!("Err({e})"),
                };
                log.calls.push(Call {
                    at,
                    relay,
                    ids,
                    end: CallEnd::Answered(answers, what),
                });
                (Some(told), false)
            }
        };
        if crashed {
            let ids = batch.iter().map(|m| m.id.to_owned()).collect();
            // The controller aborts the relay; until then nothing answers.
            let _ = self.notes.send(CrashNote { relay, at, ids });
        }
        match result {
            Some(r) => r,
            None => std::future::pending().await,
        }
    }
}

// ---- The broker adapter's judgement (as `idem::outbox::nats` judges). ----

/// What the NATS adapter tells the relay about a batch: a message the
/// stream refuses (over its size limit, a nack, a subject no stream
/// captures while JetStream answers) is refused alone; a confirmation that
/// never came leaves its message unconfirmed; a batch with no answer at all
/// is the broker down.
pub(crate) fn verdicts(answers: &[Answer]) -> Result<PublishResult, BrokerDown> {
    let v: PublishResult = answers
        .iter()
        .map(|a| match a {
            Answer::Stored { duplicate } => Verdict::Confirmed(Confirmed {
                duplicate: *duplicate,
            }),
            Answer::Refused(why) => Verdict::Refused(why.clone()),
            Answer::NoStream => Verdict::Refused("no JetStream stream captures the subject".into()),
            Answer::StoredLostAck { .. } => Verdict::Unconfirmed("nats: timed out".into()),
        })
        .collect();
    if v.iter().all(|x| matches!(x, Verdict::Unconfirmed(_))) {
        return Err(BrokerDown("nats: timed out".into()));
    }
    Ok(v)
}

/// Which messages of a result the relay counts as refused.
fn refusals(v: &PublishResult) -> impl Iterator<Item = bool> + '_ {
    v.iter().map(|r| matches!(r, Verdict::Refused(_)))
}

/// One relay process's connection to the broker.
pub(crate) struct ModelPublisher {
    pub(crate) broker: Arc<Broker>,
    pub(crate) relay: (usize, u32),
}

impl Publisher for ModelPublisher {
    fn broker(&self) -> &'static str {
        "model"
    }

    fn publish<'a>(
        &'a self,
        batch: &'a [Outgoing<'a>],
    ) -> BoxFuture<'a, Result<PublishResult, BrokerDown>> {
        Box::pin(self.broker.publish(self.relay, batch))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
