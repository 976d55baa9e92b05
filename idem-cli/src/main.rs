//! `idem`: the operator's command for idem's stores (inspect, forget, purge,
//! stats, verify, ddl) and messaging tables (outbox, consume). See
//! `idem --help` and `docs/operations.md`.

mod args;
mod commands;
mod fail;
mod open;
mod pipeline;
mod render;
mod top_keys;

use std::process::ExitCode;

use clap::Parser;

use crate::args::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("idem: cannot start the async runtime: {e}");
            return ExitCode::from(fail::OTHER);
        }
    };
    let urls = [cli.global.url(), cli.global.sql_url()].map(Option::unwrap_or_default);
    match runtime.block_on(commands::run(&cli)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            let message = urls
                .iter()
                .fold(f.message, |m, url| fail::redact_in(&m, url));
            eprintln!("idem: {message}");
            ExitCode::from(f.code)
        }
    }
}
