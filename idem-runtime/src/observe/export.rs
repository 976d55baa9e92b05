//! The top-K export: the most-repeated keys as a Prometheus gauge, honest and
//! private by default, so no service rewrites it (and none exports the raw
//! Space-Saving `count`, which with no hot key is noise).
//!
//! - The value is the *guaranteed* count, `count - error`: the key was
//!   intercepted at least that often ([`TopKey::guaranteed`]).
//! - Only keys whose guaranteed count exceeds the summary's floor are listed
//!   ([`TopKey::is_certain`]): each listed key was certainly repeated more often
//!   than any key not listed. The bound: a key intercepted more than
//!   `calls / 64` times in its scope is always in the summary (capacity 64),
//!   and its guaranteed count is within `calls / 64` of the truth.
//! - The `key` label is [`key_hash`](super::key_hash) of the rendered key
//!   (`#` and 16 hex digits), never the key: keys are request data. Find a
//!   key's hash with `key_hash(&idem.key(scene, parts))`; the raw keys stay in
//!   process, in [`Stats::top_keys`].

use std::fmt::Write;

use super::redact::key_hash;
use super::stats::Stats;
#[cfg(doc)]
use super::stats::TopKey;

/// The metric name of [`render_top_keys`].
pub const TOP_KEYS_METRIC: &str = "idem_top_key_repeats";

/// The `n` most certainly repeated keys of `stats` as Prometheus text
/// (`# HELP`, `# TYPE` and one `idem_top_key_repeats{scope,key} <guaranteed>`
/// line per key; see the module docs for the bound), for a `/metrics` handler
/// to append to its exporter's output.
///
/// ```
/// # use idem::{Idem, MemoryStore, Error};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Error> {
/// let idem = Idem::builder().store(MemoryStore::new()).namespace("shop").build()?;
/// for _ in 0..3 {
///     idem.guard("pay", &[&"order-1"]).run(|| async { Ok::<_, Error>(1) }).await?;
/// }
/// let text = idem::observe::render_top_keys(&idem.stats(), 10);
/// assert!(text.contains(r##"idem_top_key_repeats{scope="shop:pay",key="#"##));
/// assert!(text.trim_end().ends_with(" 2"), "two replays: {text}");
/// assert!(!text.contains("order-1"), "no raw key");
/// # Ok(()) }
/// ```
pub fn render_top_keys(stats: &Stats, n: usize) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP idem_top_key_repeats repeats certainly seen per key (Space-Saving count - error), \
         keys certainly above every unlisted one; key = #hash of the rendered key\n",
    );
    out.push_str("# TYPE idem_top_key_repeats gauge\n");
    for k in stats.repeated_keys().into_iter().take(n) {
        let _ = writeln!(
            out,
            "{TOP_KEYS_METRIC}{{scope=\"{}\",key=\"{}\"}} {}",
            escape(&k.scope),
            key_hash(&k.key),
            k.guaranteed()
        );
    }
    out
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
