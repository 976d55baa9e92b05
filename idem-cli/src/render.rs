//! Output: text for people by default, one JSON object with `--json`.

use std::fmt::Write as _;
use std::time::Duration;

use idem::store::{Census, PurgeReport, RecordState};
use serde_json::{Value, json};

use crate::top_keys::TopKey;

/// Where a command's answer goes, in which form.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Out {
    pub(crate) json: bool,
}

/// `1.5s`, `2m 3s`, `4h 5m`, `6d 7h`.
pub(crate) fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3_600 => format!("{}m {}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h {}m", s / 3_600, s % 3_600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// A key as a terminal may show it: control and bidirectional-format
/// characters (which could move the cursor, recolour or reorder the line)
/// escaped as `\u{…}`; everything else as it is.
pub(crate) fn shown(key: &str) -> String {
    let mut s = String::with_capacity(key.len());
    for c in key.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            let _ = write!(s, "\\u{{{:x}}}", u32::from(c));
        } else {
            s.push(c);
        }
    }
    s
}

/// A time as `2026-12-06T04:35:10Z` (UTC, whole seconds).
pub(crate) fn utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (rem / 3_600, rem % 3_600 / 60, rem % 60);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// The process an owner id names, as JSON (`null` for an id naming none).
fn holder_json(owner: idem::store::Owner) -> Value {
    let Some(h) = owner.holder() else {
        return Value::Null;
    };
    let here = idem::store::Holder::host_hash(&idem::store::Holder::this_host_name());
    json!({
        "host": format!("#{:06x}", h.host),
        "this_host": h.host == here,
        "pid": h.pid,
        "started": utc(h.started),
        "running": h.running_here(),
    })
}

/// The holder line of the text form.
fn holder_text(h: &Value) -> String {
    if h.is_null() {
        return "not recorded (a random owner id names no process)".to_owned();
    }
    let host = h["host"].as_str().unwrap_or_default();
    let pid = &h["pid"];
    let started = h["started"].as_str().unwrap_or_default();
    let status = match (h["this_host"].as_bool(), h["running"].as_bool()) {
        (Some(true), Some(true)) => "this host, running".to_owned(),
        (Some(true), Some(false)) => "this host, gone: no such process".to_owned(),
        (Some(true), None) => "this host".to_owned(),
        _ => format!("another host: check pid {pid} there"),
    };
    format!("pid {pid} on host {host}, started {started} ({status})")
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// A record as JSON: `state` is `in_progress`, `done` or `absent`.
fn record_json(key: &str, state: Option<&RecordState>) -> Value {
    let mut v = json!({ "key": key, "hash": idem::observe::key_hash(key).to_string() });
    let m = v.as_object_mut().expect("an object");
    let ms = |d: &Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match state {
        None => {
            m.insert("state".into(), json!("absent"));
        }
        Some(RecordState::InProgress {
            owner,
            fence,
            fingerprint,
            remaining,
        }) => {
            m.insert("state".into(), json!("in_progress"));
            m.insert("owner".into(), json!(format!("{:032x}", owner.0)));
            m.insert("holder".into(), holder_json(*owner));
            m.insert("fence".into(), json!(fence.get()));
            m.insert("fingerprint".into(), json!(hex(&fingerprint.0)));
            m.insert("expires_in_ms".into(), json!(ms(remaining)));
        }
        Some(RecordState::Done { record, remaining }) => {
            m.insert("state".into(), json!("done"));
            m.insert("owner".into(), json!(format!("{:032x}", record.owner.0)));
            m.insert("holder".into(), holder_json(record.owner));
            m.insert("fence".into(), json!(record.fence.get()));
            m.insert("fingerprint".into(), json!(hex(&record.fingerprint.0)));
            m.insert("expires_in_ms".into(), json!(ms(remaining)));
            m.insert("size".into(), json!(record.payload.len()));
            match record.result(key) {
                Ok(r) => {
                    m.insert("version".into(), json!(r.version));
                    m.insert("is_err".into(), json!(r.is_err));
                    m.insert("result".into(), r.json);
                }
                Err(e) => {
                    m.insert("result_error".into(), json!(e.to_string()));
                }
            }
        }
    }
    v
}

/// A record as text: one `name  value` line per field, the result last.
fn record_text(key: &str, state: Option<&RecordState>) -> String {
    let v = record_json(key, state);
    let mut s = String::new();
    let field = |s: &mut String, name: &str, value: String| {
        let _ = writeln!(s, "{name:<12} {value}");
    };
    field(&mut s, "key", shown(key));
    field(&mut s, "hash", idem::observe::key_hash(key).to_string());
    let state = v["state"].as_str().unwrap_or_default().replace('_', " ");
    field(&mut s, "state", state);
    for (name, k) in [
        ("owner", "owner"),
        ("fence", "fence"),
        ("fingerprint", "fingerprint"),
    ] {
        if let Some(x) = v.get(k) {
            field(&mut s, name, x.to_string().trim_matches('"').to_owned());
        }
        if let Some(h) = v.get("holder").filter(|_| k == "owner") {
            field(&mut s, "process", holder_text(h));
        }
    }
    if let Some(ms) = v["expires_in_ms"].as_u64() {
        field(&mut s, "expires in", duration(Duration::from_millis(ms)));
    }
    if let Some(n) = v["size"].as_u64() {
        field(&mut s, "size", format!("{n} bytes"));
    }
    if let Some(r) = v.get("result") {
        let kind = if v["is_err"] == json!(true) {
            "terminal error"
        } else {
            "ok"
        };
        field(&mut s, "version", v["version"].to_string());
        field(&mut s, "result", format!("{kind}: {r}"));
    }
    if let Some(e) = v["result_error"].as_str() {
        field(&mut s, "result", format!("not readable as JSON: {e}"));
    }
    s
}

impl Out {
    pub(crate) fn print(&self, v: &Value) {
        println!("{v}");
    }

    pub(crate) fn record(&self, key: &str, state: Option<&RecordState>) {
        if self.json {
            self.print(&record_json(key, state));
        } else if state.is_none() {
            let key = shown(key);
            println!("no record for `{key}` (never stored, expired, or forgotten)");
        } else {
            print!("{}", record_text(key, state));
        }
    }

    pub(crate) fn forgot(&self, key: &str, state: Option<&RecordState>, outcome: &str) {
        let removed = outcome == "removed";
        if self.json {
            let record = state.map(|s| record_json(key, Some(s)));
            let v = json!({ "key": key, "removed": removed, "outcome": outcome, "record": record });
            self.print(&v);
            return;
        }
        if removed {
            println!("removed:");
        }
        if state.is_some() {
            print!("{}", record_text(key, state));
        }
        if !removed {
            println!("{outcome}");
        }
    }

    /// `ls`: one line per key (state, lease or ttl left, holder), or JSON.
    pub(crate) fn listed(&self, namespace: &str, rows: &[(String, Option<RecordState>)]) {
        let records: Vec<Value> = rows
            .iter()
            .map(|(k, s)| record_json(k, s.as_ref()))
            .collect();
        if self.json {
            self.print(
                &json!({ "namespace": namespace, "count": records.len(), "records": records }),
            );
            return;
        }
        for v in &records {
            let left = v["expires_in_ms"]
                .as_u64()
                .map(|ms| duration(Duration::from_millis(ms)))
                .unwrap_or_else(|| "-".into());
            let process = match v.get("holder") {
                Some(h) => holder_text(h),
                None => String::new(),
            };
            let state = v["state"].as_str().unwrap_or_default().replace('_', " ");
            let key = shown(v["key"].as_str().unwrap_or_default());
            let hash = v["hash"].as_str().unwrap_or_default();
            println!("{key}  {hash}  {state}  {left} left  {process}");
        }
        let n = records.len();
        println!(
            "{n} key{} under namespace `{}`",
            if n == 1 { "" } else { "s" },
            shown(namespace)
        );
    }

    /// `purge`; `namespace`: only that namespace's records were purged.
    pub(crate) fn purge(
        &self,
        store: &str,
        dry_run: bool,
        r: &PurgeReport,
        namespace: Option<&str>,
    ) {
        if self.json {
            // One key per table set (`records`, `tokens`, …), as the store
            // reported them, beside the totals.
            let mut v = json!({
                "store": store, "dry_run": dry_run, "namespace": namespace, "total": r.total(),
            });
            for row in &r.tables {
                v[row.table.as_str()] = json!(row.rows);
            }
            self.print(&v);
            return;
        }
        let verb = if dry_run { "would delete" } else { "deleted" };
        if let Some(ns) = namespace {
            println!("{:<12} {:>8}", "records", r.records());
            let ns = shown(ns);
            println!(
                "{verb} {} expired records of namespace `{ns}` on {store}",
                r.records()
            );
            println!("(the other tables: purge without -n)");
            if store.starts_with("redis") {
                println!("(Redis expires records itself: there is never anything to purge)");
            }
            return;
        }
        for row in &r.tables {
            println!("{:<12} {:>8}", row.table.replace('_', " "), row.rows);
        }
        println!("{verb} {} expired rows on {store}", r.total());
        if store.starts_with("redis") {
            println!("(Redis expires records and tokens itself: there is never anything to purge)");
        }
    }

    pub(crate) fn stats(&self, namespace: &str, c: &Census, top: Option<&[TopKey]>) {
        let (p, d, e) = c.totals();
        if self.json {
            let scenes: Vec<Value> = c
                .scenes
                .iter()
                .map(|s| json!({ "scene": s.scene, "in_progress": s.in_progress, "done": s.done, "expired": s.expired }))
                .collect();
            let top: Option<Vec<Value>> = top.map(|t| {
                t.iter()
                    .map(|k| json!({ "scope": k.scope, "key": k.key, "repeats": k.repeats }))
                    .collect()
            });
            self.print(&json!({
                "namespace": namespace, "scenes": scenes,
                "totals": { "in_progress": p, "done": d, "expired": e }, "top_keys": top,
            }));
            return;
        }
        let width = c
            .scenes
            .iter()
            .map(|s| s.scene.len())
            .max()
            .unwrap_or(0)
            .max(5);
        println!(
            "{:<width$}  {:>11}  {:>8}  {:>8}",
            "scene", "in progress", "done", "expired"
        );
        for s in &c.scenes {
            let (a, b, x) = (s.in_progress, s.done, s.expired);
            println!("{:<width$}  {a:>11}  {b:>8}  {x:>8}", shown(&s.scene));
        }
        println!("{:<width$}  {p:>11}  {d:>8}  {e:>8}", "total");
        if let Some(top) = top {
            println!("\nmost repeated keys (idem_top_key_repeats):");
            if top.is_empty() {
                println!("  none listed");
            }
            for k in top {
                println!("  {:>8}  {}  {}", k.repeats, shown(&k.scope), shown(&k.key));
            }
        }
    }

    pub(crate) fn verified(&self, store: &str, r: Result<&[String], &String>, strict: bool) {
        if self.json {
            let v = match r {
                Ok(w) => {
                    json!({ "store": store, "ok": !strict || w.is_empty(), "warnings": w, "error": null })
                }
                Err(e) => json!({ "store": store, "ok": false, "warnings": [], "error": e }),
            };
            self.print(&v);
            return;
        }
        match r {
            Ok(w) => {
                for x in w {
                    println!("warning: {x}");
                }
                let failed = strict && !w.is_empty();
                let verdict = if failed {
                    "FAILED (warnings, --strict)"
                } else {
                    "ok"
                };
                println!("verify {store}: {verdict}");
            }
            Err(e) => println!("verify {store}: FAILED: {e}"),
        }
    }
}
