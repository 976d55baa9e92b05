//! The most repeated keys, read from a service's Prometheus `/metrics`
//! (`idem_top_key_repeats{scope,key}`, written by
//! `idem::observe::render_top_keys`): a plain HTTP/1.0 `GET`, so the command
//! needs no HTTP client crate.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::fail::{Fail, OTHER, UNREACHABLE, USAGE};

/// One listed key: its scope, its hash (`#…`, never the raw key) and the
/// repeats certainly seen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TopKey {
    pub(crate) scope: String,
    pub(crate) key: String,
    pub(crate) repeats: f64,
}

/// The `top` most repeated keys the endpoint at `url` lists, within
/// `budget` (`--timeout`): an endpoint that does not answer is named as
/// itself, never as the store.
pub(crate) async fn fetch(url: &str, top: usize, budget: Duration) -> Result<Vec<TopKey>, Fail> {
    tokio::time::timeout(budget, get(url, top))
        .await
        .unwrap_or_else(|_| {
            Err(Fail::new(
                UNREACHABLE,
                format!(
                    "the metrics endpoint {url} did not answer within {} (--timeout); the store \
                     answered: check the service's address and that it serves /metrics",
                    crate::render::duration(budget)
                ),
            ))
        })
}

async fn get(url: &str, top: usize) -> Result<Vec<TopKey>, Fail> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| Fail::new(USAGE, "--metrics takes an http:// URL"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/metrics" } else { path };
    let addr = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    let down = |e: std::io::Error| Fail::new(UNREACHABLE, format!("metrics at {url}: {e}"));
    let mut s = tokio::net::TcpStream::connect(&addr).await.map_err(down)?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/plain\r\n\r\n");
    s.write_all(req.as_bytes()).await.map_err(down)?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).await.map_err(down)?;
    let text = String::from_utf8_lossy(&body);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(Fail::new(OTHER, format!("metrics at {url}: `{status}`")));
    }
    let mut keys = parse(body);
    keys.sort_by(|a, b| b.repeats.total_cmp(&a.repeats));
    keys.truncate(top);
    Ok(keys)
}

/// The `idem_top_key_repeats` samples of a Prometheus text page.
pub(crate) fn parse(text: &str) -> Vec<TopKey> {
    let metric = idem::observe::TOP_KEYS_METRIC;
    text.lines()
        .filter_map(|line| {
            let labels = line.strip_prefix(metric)?.strip_prefix('{')?;
            let (labels, value) = labels.rsplit_once('}')?;
            let repeats = value.split_whitespace().next()?.parse().ok()?;
            Some(TopKey {
                scope: label(labels, "scope")?,
                key: label(labels, "key")?,
                repeats,
            })
        })
        .collect()
}

/// The value of `name="…"` among Prometheus labels, unescaped.
fn label(labels: &str, name: &str) -> Option<String> {
    let mut rest = labels;
    loop {
        let (k, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        if k.trim_start_matches(',').trim() == name {
            return Some(value);
        }
        rest = &after[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_exported_lines() {
        let page = "# HELP idem_top_key_repeats x\n# TYPE idem_top_key_repeats gauge\n\
                    idem_top_key_repeats{scope=\"shop:pay\",key=\"#00ff\"} 7\n\
                    idem_top_key_repeats{scope=\"a\\\"b\",key=\"#01\"} 2\n\
                    idem_calls_total{technique=\"guard\"} 9\n";
        let keys = parse(page);
        assert_eq!(keys.len(), 2);
        assert_eq!(
            (keys[0].scope.as_str(), keys[0].key.as_str()),
            ("shop:pay", "#00ff")
        );
        assert_eq!(keys[0].repeats, 7.0);
        assert_eq!(keys[1].scope, "a\"b");
    }
}
