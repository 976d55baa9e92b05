//! Runs one outbox schedule: the producers' transactions, the relays (their
//! starts, crashes and restarts), the model broker, and a meter of how late
//! the machine runs timers (so the time-bound invariants can allow for a
//! loaded machine). Real time, on this thread's SQLite (`sqlite.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::consume::{Shutdown, shutdown};
use idem::outbox::{Parked, Relay, RelayOptions};
use idem::sql::SqlStore;
use sqlx::SqlitePool;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};

use super::outbox::ObxSchedule;
use super::outbox_broker::{Broker, BrokerLog, CrashNote, ModelPublisher};
use super::outbox_consume::{Consumption, consume};
use super::outbox_produce::{TxOut, plan, produce};
use super::sqlite::{int, with_db};

/// An `on_park` call: message id, attempts, relay (slot, incarnation).
pub(crate) type ParkCall = (String, u32, (usize, u32));

/// A row of the table at the end.
#[derive(Debug, Clone)]
pub(crate) struct RowOut {
    pub(crate) id: String,
    pub(crate) seq: i64,
    pub(crate) topic: String,
    pub(crate) business_id: String,
    pub(crate) state: i64,
    pub(crate) attempts: i64,
}

/// A relay crash: when, and the messages its claims held then.
#[derive(Debug, Clone)]
pub(crate) struct CrashOut {
    pub(crate) relay: (usize, u32),
    pub(crate) at: Duration,
    pub(crate) held: Vec<String>,
}

#[derive(Debug, Default)]
pub(crate) struct RunOut {
    pub(crate) txs: Vec<Option<TxOut>>,
    pub(crate) rows: Vec<RowOut>,
    pub(crate) broker: BrokerLog,
    /// `on_park` calls: message id, attempts, relay.
    pub(crate) parks: Vec<ParkCall>,
    pub(crate) crashes: Vec<CrashOut>,
    pub(crate) restarts: usize,
    /// (when, total lateness of the meter's timers so far).
    pub(crate) lag: Vec<(Duration, Duration)>,
    /// When the table was drained (nothing pending), if it was.
    pub(crate) drained: Option<Duration>,
    /// The broker's log through the consume log.
    pub(crate) consumption: Consumption,
}

pub(crate) fn run(s: &ObxSchedule) -> RunOut {
    with_db(|pool| async move {
        for sql in [
            "DELETE FROM idem_outbox",
            "DELETE FROM sqlite_sequence WHERE name = 'idem_outbox'",
            "DELETE FROM idem_consume_log",
        ] {
            sqlx::query(sql)
                .execute(&pool)
                .await
                .expect("empty the outbox");
        }
        Sim::new(s, pool).go().await
    })
}

/// A running relay process.
struct Live {
    handle: JoinHandle<()>,
    stop: Shutdown,
}

struct Sim<'s> {
    s: &'s ObxSchedule,
    pool: SqlitePool,
    t0: Instant,
    broker: Arc<Broker>,
    notes: tokio::sync::mpsc::UnboundedReceiver<CrashNote>,
    parks: Arc<Mutex<Vec<ParkCall>>>,
    live: HashMap<usize, Live>,
    out: RunOut,
}

impl<'s> Sim<'s> {
    fn new(s: &'s ObxSchedule, pool: SqlitePool) -> Self {
        let (tx, notes) = tokio::sync::mpsc::unbounded_channel();
        let t0 = Instant::now();
        let crashes = s
            .relays
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.crash.map(|c| ((i, 0), (c.call, c.stored))))
            .collect();
        let broker = Arc::new(Broker {
            seed: s.seed,
            t0,
            spec: s.broker.clone(),
            crashes,
            notes: tx,
            log: Mutex::default(),
        });
        Sim {
            s,
            pool,
            t0,
            broker,
            notes,
            parks: Arc::default(),
            live: HashMap::new(),
            out: RunOut::default(),
        }
    }

    fn spawn_relay(&mut self, slot: usize, inc: u32) {
        let k = self.s.knobs;
        let mut o = RelayOptions::new(format!("r{slot}.{inc}"));
        o.batch = k.batch;
        o.lease = Duration::from_millis(k.lease_ms);
        o.in_flight = k.in_flight;
        o.idle_poll = Duration::from_millis(k.idle_ms);
        o.idle_max = Duration::from_millis(4 * k.idle_ms);
        // SQLite has no NOTIFY: the relays poll.
        o.wake_on_commit = false;
        o.retry_min = Duration::from_millis(k.retry_min_ms);
        o.retry_max = Duration::from_millis(k.retry_max_ms);
        o.max_attempts = k.max_attempts;
        o.publish_timeout = Duration::from_millis(k.publish_timeout_ms());
        o.op_timeout = Duration::from_secs(2);
        o.breaker_cooldown = Duration::from_millis(50);
        let parks = self.parks.clone();
        o.on_park = Some(Arc::new(move |p: &Parked| {
            let mut v = parks.lock().expect("the park log");
            v.push((p.id.as_str().to_owned(), p.attempts, (slot, inc)));
        }));
        let publisher = ModelPublisher {
            broker: self.broker.clone(),
            relay: (slot, inc),
        };
        let relay = Relay::new(SqlStore::sqlite(self.pool.clone()), publisher, o);
        let (stop, signal) = shutdown();
        let handle = tokio::spawn(async move { relay.run(signal).await });
        self.live.insert(slot, Live { handle, stop });
    }

    async fn go(mut self) -> RunOut {
        let s = self.s;
        let lag = Arc::new(Mutex::new(Vec::new()));
        let meter = tokio::spawn(lag_meter(self.t0, lag.clone()));
        let mut producers = tokio::spawn(produce(s.clone(), plan(s), self.pool.clone(), self.t0));
        let mut starts: Vec<(u64, usize, u32)> = s
            .relays
            .iter()
            .enumerate()
            .map(|(i, r)| (r.start_ms, i, 0))
            .collect();
        let deadline = self.t0 + Duration::from_millis(s.deadline_ms());
        let mut txs = None;
        loop {
            starts.sort();
            let next = starts.first().map(|x| self.t0 + Duration::from_millis(x.0));
            tokio::select! {
                Some(note) = self.notes.recv() => self.crashed(note, &mut starts).await,
                _ = sleep_until(next.unwrap_or(deadline)), if next.is_some() => {
                    let (_, slot, inc) = starts.remove(0);
                    self.spawn_relay(slot, inc);
                }
                _ = sleep(Duration::from_millis(20)) => {
                    if txs.is_none() && producers.is_finished() {
                        txs = Some((&mut producers).await.expect("the producers"));
                        continue;
                    }
                    let pending = int(&self.pool, "SELECT COUNT(*) FROM idem_outbox WHERE state = 0").await;
                    if txs.is_some() && starts.is_empty() && pending == 0 {
                        self.out.drained = Some(self.t0.elapsed());
                        break;
                    }
                }
                _ = sleep_until(deadline) => break,
            }
        }
        self.stop_all().await;
        self.out.txs = match txs {
            Some(t) => t,
            None => {
                producers.abort();
                vec![None; s.txs.len()]
            }
        };
        meter.abort();
        self.out.lag = lag.lock().expect("the lag log").clone();
        self.out.rows = rows(&self.pool).await;
        self.out.broker = self.broker.log.lock().expect("the broker log").clone();
        self.out.parks = self.parks.lock().expect("the park log").clone();
        let ns_of = s
            .txs
            .iter()
            .zip(&self.out.txs)
            .filter_map(|(t, o)| Some((t, o.as_ref()?)))
            .flat_map(|(t, o)| o.ids.iter().flatten().map(|id| (id.clone(), t.ns)))
            .collect();
        self.out.consumption = consume(&self.pool, &self.out.broker.stored, &ns_of).await;
        self.out
    }

    /// A relay crashed inside a publish: abort its process, note what its
    /// claims held, and start it again later if the schedule says so.
    async fn crashed(&mut self, note: CrashNote, starts: &mut Vec<(u64, usize, u32)>) {
        let (slot, inc) = note.relay;
        if let Some(live) = self.live.remove(&slot) {
            live.handle.abort();
            let _ = live.handle.await;
        }
        let first = note.ids.first().cloned().unwrap_or_default();
        // A relay's claims' owners share their first 8 bytes.
        let held: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM idem_outbox WHERE state = 0 AND owner IS NOT NULL \
             AND substr(owner, 1, 8) = (SELECT substr(owner, 1, 8) FROM idem_outbox WHERE id = ?1)",
        )
        .bind(&first)
        .fetch_all(&self.pool)
        .await
        .expect("read the held messages");
        self.out.crashes.push(CrashOut {
            relay: note.relay,
            at: note.at,
            held,
        });
        if let Some(ms) = self.s.relays[slot].crash.and_then(|c| c.restart_ms) {
            let at = self.t0.elapsed().as_millis() as u64 + ms;
            starts.push((at, slot, inc + 1));
            self.out.restarts += 1;
        }
    }

    /// Asks every relay to stop, lets them finish what they hold for a
    /// while, then aborts the rest.
    async fn stop_all(&mut self) {
        for l in self.live.values() {
            l.stop.trigger();
        }
        for (_, l) in self.live.drain() {
            let mut h = l.handle;
            if tokio::time::timeout(Duration::from_millis(1500), &mut h)
                .await
                .is_err()
            {
                h.abort();
                let _ = h.await;
            }
        }
    }
}

async fn rows(pool: &SqlitePool) -> Vec<RowOut> {
    let got: Vec<(String, i64, String, String, i64, i64)> = sqlx::query_as(
        "SELECT id, seq, topic, business_id, state, attempts FROM idem_outbox ORDER BY seq",
    )
    .fetch_all(pool)
    .await
    .expect("read the outbox");
    got.into_iter()
        .map(|(id, seq, topic, business_id, state, attempts)| RowOut {
            id,
            seq,
            topic,
            business_id,
            state,
            attempts,
        })
        .collect()
}

/// Records how late 5 ms timers fire: on a loaded machine every deadline of
/// the run slips by about as much.
async fn lag_meter(t0: Instant, out: Arc<Mutex<Vec<(Duration, Duration)>>>) {
    let tick = Duration::from_millis(5);
    let mut total = Duration::ZERO;
    loop {
        let a = Instant::now();
        sleep(tick).await;
        let late = a.elapsed().saturating_sub(tick);
        if late > Duration::from_millis(2) {
            total += late;
            out.lock().expect("the lag log").push((t0.elapsed(), total));
        }
    }
}

/// The meter's lateness between `a` and `b`.
pub(crate) fn lag_between(lag: &[(Duration, Duration)], a: Duration, b: Duration) -> Duration {
    let at = |t: Duration| {
        lag.iter()
            .take_while(|(w, _)| *w <= t)
            .last()
            .map_or(Duration::ZERO, |x| x.1)
    };
    at(b).saturating_sub(at(a))
}
