//! `idem`: the operator's command for idem's stores (inspect, forget, purge,
//! stats, verify, ddl) and messaging tables (outbox, consume). See
//! `idem --help` and `docs/operations.md`.

mod args;
mod commands;
mod fail;
#[cfg(test)]
mod forget_race;
mod keys;
mod open;
mod pipeline;
mod probe;
mod render;
mod top_keys;

use std::process::ExitCode;

use clap::Parser;

use crate::args::Cli;

fn main() -> ExitCode {
    // `--json` anywhere: even a usage error is one JSON object.
    let json = std::env::args().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !json || !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.render().to_string();
            let text = text.trim().trim_start_matches("error: ");
            return failed(&fail::Fail::new(fail::USAGE, text), true);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let f = fail::Fail::new(fail::OTHER, format!("cannot start the async runtime: {e}"));
            return failed(&f, cli.global.json);
        }
    };
    let urls = [cli.global.url(), cli.global.sql_url()].map(Option::unwrap_or_default);
    match runtime.block_on(commands::run(&cli)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            let message = urls
                .iter()
                .fold(f.message.clone(), |m, url| fail::redact_in(&m, url));
            failed(&fail::Fail::new(f.code, message), cli.global.json)
        }
    }
}

/// Reports `f` (its message already redacted): `idem: …` on stderr, or with
/// `--json` one object on stdout, `{"error": {"code", "class", "message"}}`.
fn failed(f: &fail::Fail, json: bool) -> ExitCode {
    if json {
        let v = serde_json::json!({
            "error": { "code": f.code, "class": f.class(), "message": f.message }
        });
        println!("{v}");
    } else {
        eprintln!("idem: {}", f.message);
    }
    ExitCode::from(f.code)
}
