//! The table a run prints (Markdown, as BENCHMARKS.md records it).

use crate::ScenarioResult;
use crate::redis_memory::MemoryReport;

pub(crate) fn print_table(results: &[ScenarioResult], memory: &MemoryReport) {
    println!();
    println!(
        "| scenario | conc | load | side | calls/s | calls/s min–median–max | p50 µs | p99 µs | A's cost ÷ side | its min–median–max | A's calls/s ÷ side | target | met |"
    );
    println!("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for r in results {
        let conc = if r.procs > 1 {
            format!("{}×{}", r.procs, r.concurrency)
        } else {
            r.concurrency.to_string()
        };
        let load = format!("{:.1}→{:.1}", r.load[0], r.load[1]);
        for (i, s) in r.sides.iter().enumerate() {
            let (rate, ratio) = match r.repeats.get(i) {
                Some((rate, ratio)) => (
                    format!("{:.0}–{:.0}–{:.0}", rate.min, rate.median, rate.max),
                    ratio.map_or(String::new(), |x| {
                        format!("{:.3}–{:.3}–{:.3}", x.min, x.median, x.max)
                    }),
                ),
                None => (String::new(), String::new()),
            };
            let (cost, thr) = match r.ratios.get(i) {
                Some(x) if i > 0 => (format!("**{x:.3}**"), format!("{:.2}×", 1.0 / x)),
                _ => (String::new(), String::new()),
            };
            let (target, met) = match r.targets.iter().find(|(side, _, _)| *side == i) {
                Some((_, t, met)) => (t.text(), if *met { "yes" } else { "**no**" }.to_owned()),
                None => (String::new(), String::new()),
            };
            println!(
                "| {} | {} | {} | {} | {:.0} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
                if i == 0 { r.title.as_str() } else { "" },
                if i == 0 { conc.as_str() } else { "" },
                if i == 0 { load.as_str() } else { "" },
                s.name,
                s.calls_per_s,
                rate,
                s.p50_us,
                s.p99_us,
                cost,
                ratio,
                thr,
                target,
                met
            );
        }
    }
    println!();
    println!("Redis memory per record (MEMORY USAGE), 41-byte idem key, 200-byte result:");
    println!("| record | bytes | key | value | overhead beyond key + result | target |");
    println!("|---|---:|---:|---:|---:|---|");
    for m in &memory.rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            m.what,
            m.usage,
            m.key_len,
            m.result_len,
            m.overhead,
            if m.target { "≤ 128" } else { "—" }
        );
    }
}
