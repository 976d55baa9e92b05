//! The consuming side of the outbox simulation: every message the broker
//! stored, in the order it stored them (a message stored twice is delivered
//! twice), handed to the real consume log (`idem::consume::consume_once`) in
//! the simulation's SQLite, as a `#[consume_once]` handler keyed on the
//! message id and on (topic, business id) would be. Each namespace is its
//! own consumer (two services read their own streams). A handler's effect is
//! one row in `t_biz`, keyed by the fact.

use std::collections::{BTreeMap, HashMap};

use idem::consume::{Consumed, Message, consume_once};
use sqlx::SqlitePool;

use super::outbox_broker::Stored;

/// What the consume log said per delivery, and the committed effect rows
/// per fact (`namespace|topic|business id`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Consumption {
    pub(crate) got: Vec<(String, String)>,
    pub(crate) effects: BTreeMap<String, i64>,
}

/// The fact a message is about.
pub(crate) fn fact_key(ns: usize, topic: &str, business_id: &str) -> String {
    format!("{ns}|{topic}|{business_id}")
}

/// A handler's error, as text (the checker reports it).
#[derive(Debug)]
struct CErr(String);

impl From<idem::Error> for CErr {
    fn from(e: idem::Error) -> Self {
        CErr(e.to_string())
    }
}

/// Delivers `stored` in order; `ns_of` gives each message id's namespace
/// (what the stream it came from tells a real consumer).
pub(crate) async fn consume(
    pool: &SqlitePool,
    stored: &[Stored],
    ns_of: &HashMap<String, usize>,
) -> Consumption {
    let mut out = Consumption::default();
    for (i, m) in stored.iter().enumerate() {
        let ns = ns_of.get(&m.id).copied().unwrap_or(0);
        let consumer = format!("sim-{ns}");
        let business = format!("{}/{}", m.topic, m.business_id);
        let key = fact_key(ns, &m.topic, &m.business_id);
        let mut tx = pool.begin().await.expect("begin");
        let message = Message {
            consumer: &consumer,
            id: &m.id,
            business: Some(("outbox", &business)),
        };
        let got = consume_once(&mut tx, message)
            .run(
                async move |tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>| {
                    sqlx::query("INSERT INTO t_biz (k, call) VALUES (?, ?)")
                        .bind(&key)
                        .bind(i as i64)
                        .execute(&mut **tx)
                        .await
                        .map_err(|e| CErr(e.to_string()))?;
                    Ok::<(), CErr>(())
                },
            )
            .await;
        let said = match got {
            Ok(Consumed::Processed(())) => "processed".to_owned(),
            Ok(Consumed::Duplicate { by }) => format!("duplicate ({by:?})"),
            Err(CErr(e)) => format!("error: {e}"),
        };
        if said.starts_with("error") {
            drop(tx);
        } else {
            tx.commit().await.expect("commit");
        }
        out.got.push((m.id.clone(), said));
    }
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT k, COUNT(*) FROM t_biz GROUP BY k")
        .fetch_all(pool)
        .await
        .expect("read the effects");
    out.effects = rows.into_iter().collect();
    out
}
