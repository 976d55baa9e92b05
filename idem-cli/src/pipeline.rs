//! `idem outbox` and `idem consume`: the messaging tables of the service's
//! SQL database, read and changed through the library's own calls
//! (`SqlStore::outbox_topics`, `outbox_parked`, `outbox_unpark`,
//! `consume_log_counts`), rendered as text or one JSON object.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use idem::consume::ConsumerRows;
use idem::outbox::{OutboxTopic, ParkedMessage, Unpark};
use idem::store::sql::SqlStore;
use serde_json::{Value, json};

use crate::args::{Global, OutboxAction};
use crate::fail::{Fail, NO, OK, USAGE};
use crate::open::Messaging;
use crate::render::{Out, duration};

/// `idem outbox [--parked [--limit N]] [retry ID]`.
pub(crate) async fn outbox(
    g: &Global,
    action: Option<&OutboxAction>,
    parked: bool,
    limit: u32,
    out: Out,
) -> Result<u8, Fail> {
    if parked && action.is_some() {
        return Err(Fail::new(
            USAGE,
            "--parked lists; `retry ID` unparks: one at a time",
        ));
    }
    let store = crate::open::messaging(g, Messaging::Outbox).await?;
    let table = store.tables().outbox_name().to_owned();
    match action {
        Some(OutboxAction::Retry { id }) => retry(&store, &table, id, out).await,
        None if parked => list_parked(&store, &table, limit, out).await,
        None => {
            let mut topics = store
                .outbox_topics()
                .await
                .map_err(|e| Fail::store("outbox", e))?;
            // `-n`: one namespace's messages (`OutboxTable::namespace`).
            if !g.namespace.is_empty() {
                topics.retain(|t| t.namespace == g.namespace);
            }
            topics_out(&table, &topics, out);
            Ok(OK)
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn age(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".to_owned(), duration)
}

fn topics_out(table: &str, topics: &[OutboxTopic], out: Out) {
    let (pending, parked, sent) = topics.iter().fold((0, 0, 0), |(p, k, s), t| {
        (p + t.pending, k + t.parked, s + t.sent)
    });
    if out.json {
        let list: Vec<Value> = topics
            .iter()
            .map(|t| {
                json!({
                    "namespace": t.namespace, "topic": t.topic, "pending": t.pending, "parked": t.parked, "sent": t.sent,
                    "oldest_pending_ms": t.oldest_pending.map(ms), "lag_ms": t.lag.map(ms),
                })
            })
            .collect();
        out.print(&json!({
            "table": table, "topics": list,
            "totals": { "pending": pending, "parked": parked, "sent": sent },
        }));
        return;
    }
    if topics.is_empty() {
        println!("no messages in {table}");
        return;
    }
    // Messages of a namespace other than the default's show as `ns/topic`.
    let label = |t: &OutboxTopic| {
        if t.namespace.is_empty() {
            t.topic.clone()
        } else {
            format!("{}/{}", t.namespace, t.topic)
        }
    };
    let width = topics
        .iter()
        .map(|t| label(t).len())
        .max()
        .unwrap_or(0)
        .max(5);
    println!(
        "{:<width$}  {:>8}  {:>8}  {:>8}  {:>14}  {:>8}",
        "topic", "pending", "parked", "sent", "oldest pending", "lag"
    );
    for t in topics {
        println!(
            "{:<width$}  {:>8}  {:>8}  {:>8}  {:>14}  {:>8}",
            label(t),
            t.pending,
            t.parked,
            t.sent,
            age(t.oldest_pending),
            age(t.lag)
        );
    }
    println!("{:<width$}  {pending:>8}  {parked:>8}  {sent:>8}", "total");
}

async fn list_parked(store: &SqlStore, table: &str, limit: u32, out: Out) -> Result<u8, Fail> {
    // One more than shown says whether there are more.
    let mut list = store
        .outbox_parked(limit.saturating_add(1))
        .await
        .map_err(|e| Fail::store("outbox --parked", e))?;
    let more = list.len() > limit as usize;
    list.truncate(limit as usize);
    if out.json {
        let items: Vec<Value> = list.iter().map(parked_json).collect();
        out.print(&json!({ "table": table, "parked": items, "more": more }));
        return Ok(OK);
    }
    if list.is_empty() {
        println!("no parked messages in {table}");
        return Ok(OK);
    }
    for m in &list {
        let mut s = String::new();
        let _ = writeln!(s, "{}", m.id);
        let _ = writeln!(s, "  topic        {}", m.topic);
        let _ = writeln!(s, "  business id  {}", m.business_id);
        let _ = writeln!(s, "  attempts     {}", m.attempts);
        let created = format!("{} ({} ago)", utc(m.created_at), duration(m.age));
        let _ = writeln!(s, "  created      {created}");
        let error = m.last_error.as_deref().unwrap_or("-");
        let _ = writeln!(s, "  last error   {error}");
        print!("{s}");
    }
    let shown = list.len();
    let tail = if more {
        format!(" (more: raise --limit {limit})")
    } else {
        String::new()
    };
    println!("{shown} parked in {table}{tail}; `idem outbox retry ID` unparks one");
    Ok(OK)
}

fn parked_json(m: &ParkedMessage) -> Value {
    let created_ms = m
        .created_at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, ms);
    json!({
        "id": m.id, "topic": m.topic, "business_id": m.business_id, "attempts": m.attempts,
        "last_error": m.last_error, "created_at": utc(m.created_at),
        "created_at_ms": created_ms, "age_ms": ms(m.age),
    })
}

async fn retry(store: &SqlStore, table: &str, id: &str, out: Out) -> Result<u8, Fail> {
    let done = store
        .outbox_unpark(id)
        .await
        .map_err(|e| Fail::store("outbox retry", e))?;
    let (outcome, state, code, text) = match done {
        Unpark::Unparked => (
            "unparked",
            Some("pending"),
            OK,
            format!("unparked {id}: pending again, attempts 0, due now"),
        ),
        Unpark::NotFound => (
            "not_found",
            None,
            NO,
            format!("no message `{id}` in {table}: nothing changed"),
        ),
        Unpark::NotParked(s) => (
            "not_parked",
            Some(s.name()),
            NO,
            format!("{id} is {}, not parked: nothing changed", s.name()),
        ),
        // A later kind of answer: reported, and not a success.
        _ => ("unknown", None, NO, format!("{id}: {done:?}")),
    };
    if out.json {
        out.print(&json!({ "table": table, "id": id, "outcome": outcome, "state": state }));
    } else {
        println!("{text}");
    }
    Ok(code)
}

/// `idem consume`: the log's rows per consumer and message type.
pub(crate) async fn consume(g: &Global, out: Out) -> Result<u8, Fail> {
    let store = crate::open::messaging(g, Messaging::ConsumeLog).await?;
    let table = store.tables().consume_log_name().to_owned();
    let rows = store
        .consume_log_counts(&g.namespace)
        .await
        .map_err(|e| Fail::store("consume", e))?;
    consumers_out(&g.namespace, &table, &rows, out);
    Ok(OK)
}

fn consumers_out(namespace: &str, table: &str, rows: &[ConsumerRows], out: Out) {
    let (total, expired) = rows
        .iter()
        .fold((0, 0), |(n, x), r| (n + r.rows, x + r.expired));
    if out.json {
        let list: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "consumer": r.consumer, "msg_type": r.msg_type, "rows": r.rows,
                    "expired": r.expired, "oldest_ms": ms(r.oldest), "newest_ms": ms(r.newest),
                })
            })
            .collect();
        out.print(&json!({
            "namespace": namespace, "table": table, "consumers": list,
            "totals": { "rows": total, "expired": expired },
        }));
        return;
    }
    if rows.is_empty() {
        println!("no rows in {table} under namespace `{namespace}`");
        return;
    }
    let w1 = rows
        .iter()
        .map(|r| r.consumer.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let ty = |r: &ConsumerRows| r.msg_type.clone().unwrap_or_else(|| "-".into());
    let w2 = rows.iter().map(|r| ty(r).len()).max().unwrap_or(0).max(12);
    println!(
        "{:<w1$}  {:<w2$}  {:>8}  {:>8}  {:>10}  {:>10}",
        "consumer", "message type", "rows", "expired", "oldest", "newest"
    );
    for r in rows {
        println!(
            "{:<w1$}  {:<w2$}  {:>8}  {:>8}  {:>10}  {:>10}",
            r.consumer,
            ty(r),
            r.rows,
            r.expired,
            duration(r.oldest),
            duration(r.newest)
        );
    }
    println!("{:<w1$}  {:<w2$}  {total:>8}  {expired:>8}", "total", "");
    println!("(ages: how long ago the oldest and newest row's message was consumed)");
}

/// `2025-06-01T12:03:04.123Z` (UTC, milliseconds).
fn utc(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (y, m, day) = civil(days);
    let rest = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60,
        d.subsec_millis()
    )
}

/// The civil date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        let at = |s: u64, ms: u64| {
            utc(SystemTime::UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(1_700_000_000, 5), "2023-11-14T22:13:20.005Z");
        assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
    }
}
