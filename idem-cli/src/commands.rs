//! The subcommands: each reads or changes the store through the library's
//! own calls (`Store::inspect`, `release`, `forget`, `purge_report`,
//! `census`, `Idem::verify`, `idem::sql::ddl`), keys rendered by its key
//! writer (`idem::Key::from_parts`).

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;
use idem::store::{Census, PurgeReport, RecordState};
use idem::{Idem, Store};
use serde_json::json;

use crate::args::{Cli, Command, DialectArg, Global};
use crate::fail::{Fail, NO, OK, OTHER, UNREACHABLE};
use crate::render::{self, Out};

/// Runs the command; `Ok` holds the exit code of a command that answered.
pub(crate) async fn run(cli: &Cli) -> Result<u8, Fail> {
    let g = &cli.global;
    let out = Out { json: g.json };
    if let Command::Ddl { dialect } = &cli.command {
        let dialect = match dialect {
            DialectArg::Postgres => Dialect::Postgres,
            DialectArg::Mysql => Dialect::MySql,
            DialectArg::Sqlite => Dialect::Sqlite,
        };
        let text = idem::sql::ddl(dialect, &crate::open::tables(g)?);
        if g.json {
            out.print(&json!({ "dialect": dialect.name(), "ddl": text }));
        } else {
            print!("{text}");
        }
        return Ok(OK);
    }
    let budget = g.timeout.max(Duration::from_millis(100));
    let messaging = matches!(cli.command, Command::Outbox { .. } | Command::Consume);
    let work = async {
        match &cli.command {
            Command::Outbox {
                action,
                parked,
                limit,
            } => {
                return crate::pipeline::outbox(g, action.as_ref(), *parked, *limit, out)
                    .await
                    .map(Done);
            }
            Command::Consume => return crate::pipeline::consume(g, out).await.map(Done),
            _ => {}
        }
        let store = crate::open::store(g).await?;
        match &cli.command {
            Command::Ls {
                state,
                scene,
                limit,
            } => crate::keys::ls(&*store, g, *state, scene.as_deref(), *limit, out).await,
            Command::Inspect(k) => {
                let key = crate::keys::resolve(&*store, g, k).await?;
                inspect(&*store, &key, out).await
            }
            Command::Forget { key: k, force } => {
                let key = crate::keys::resolve(&*store, g, k).await?;
                forget(&*store, &key, *force, out).await
            }
            Command::Purge { dry_run } => purge(&*store, g, *dry_run, out).await,
            Command::Stats { metrics, top } => {
                let census = census(&*store, g).await?;
                // Fetched after the store answered, on its own clock: a
                // hanging endpoint is named as itself, never as the store.
                return Ok(Stats(census, metrics.clone(), *top));
            }
            Command::Verify {
                backstops,
                constraints,
                strict,
            } => verify(store, g, backstops, constraints.as_deref(), *strict, out).await,
            Command::Ddl { .. } | Command::Outbox { .. } | Command::Consume => {
                unreachable!("answered above")
            }
        }
        .map(Done)
    };
    let answered = tokio::time::timeout(budget, work)
        .await
        .unwrap_or_else(|_| {
            // Named as the other store errors are: the URL, password masked.
            let url = if messaging { g.sql_url() } else { g.url() };
            let at = url
                .map(|u| crate::fail::redact_in(&u, &u))
                .unwrap_or_default();
            Err(Fail::new(
                UNREACHABLE,
                format!(
                    "the store at `{at}` did not answer within {} (--timeout); check that \
                     the server is running and reachable from this host",
                    render::duration(budget)
                ),
            ))
        })?;
    match answered {
        Done(code) => Ok(code),
        Stats(census, metrics, top) => {
            let top_keys = match metrics {
                Some(url) => Some(crate::top_keys::fetch(&url, top, budget).await?),
                None => None,
            };
            out.stats(&g.namespace, &census, top_keys.as_deref());
            Ok(OK)
        }
    }
}

/// What the store part of a command ended with.
enum Answered {
    /// The command's exit code.
    Done(u8),
    /// `stats`: the census, then the metrics URL and how many keys to show.
    Stats(Census, Option<String>, usize),
}
use Answered::{Done, Stats};

pub(crate) async fn inspect(store: &dyn Store, key: &str, out: Out) -> Result<u8, Fail> {
    let state = store
        .inspect(key)
        .await
        .map_err(|e| Fail::store("inspect", e))?;
    out.record(key, state.as_ref());
    Ok(if state.is_some() { OK } else { NO })
}

/// Owner-safe: deletes the record only while it is still the one inspected
/// (`Store::forget_if`: same state, owner, fence and fingerprint), so a
/// record that expired and was claimed anew meanwhile, or a claim that
/// finished, is left alone; a live claim only with `--force`.
pub(crate) async fn forget(
    store: &dyn Store,
    key: &str,
    force: bool,
    out: Out,
) -> Result<u8, Fail> {
    let state = store
        .inspect(key)
        .await
        .map_err(|e| Fail::store("inspect", e))?;
    let Some(seen) = &state else {
        out.forgot(key, None, "no record: nothing removed");
        return Ok(NO);
    };
    if let RecordState::InProgress { remaining, .. } = seen
        && !force
    {
        let why = format!(
            "refused: a live in-progress claim (lease left {}); its body may still run. \
             Use --force once you know its process is gone",
            render::duration(*remaining)
        );
        out.forgot(key, state.as_ref(), &why);
        return Ok(NO);
    }
    let removed = store
        .forget_if(key, seen)
        .await
        .map_err(|e| Fail::store("forget", e))?;
    if removed {
        out.forgot(key, state.as_ref(), "removed");
        Ok(OK)
    } else {
        let why = "nothing removed: the record changed since it was read (it finished, expired, \
                   or the key was claimed anew); inspect it again";
        out.forgot(key, state.as_ref(), why);
        Ok(NO)
    }
}

/// Every table's expired rows; with `-n`, that namespace's records only.
async fn purge(store: &dyn Store, g: &Global, dry_run: bool, out: Out) -> Result<u8, Fail> {
    let fail = |e| Fail::store("purge", e);
    if g.namespace.is_empty() {
        let report = store.purge_report(dry_run).await.map_err(fail)?;
        out.purge(store.name(), dry_run, &report, None);
    } else {
        let records = store
            .purge_namespace(&g.namespace, dry_run)
            .await
            .map_err(fail)?;
        let report = PurgeReport::default().with("records", records);
        out.purge(store.name(), dry_run, &report, Some(&g.namespace));
    }
    Ok(OK)
}

async fn census(store: &dyn Store, g: &Global) -> Result<Census, Fail> {
    store
        .census(&g.namespace)
        .await
        .map_err(|e| Fail::store("stats", e))
}

async fn verify(
    store: Arc<dyn Store>,
    g: &Global,
    backstops: &[String],
    constraints: Option<&str>,
    strict: bool,
    out: Out,
) -> Result<u8, Fail> {
    // The store's own check first, so an unreachable store exits 3, not 1.
    if let Err(e) = store.verify().await {
        if matches!(e, idem::store::StoreError::Unavailable(_)) {
            return Err(Fail::store("verify", e));
        }
        out.verified(
            store.name(),
            Err(&format!("store `{}`: {e}", store.name())),
            strict,
        );
        return Ok(NO);
    }
    let mut b = Idem::builder()
        .shared_store(Arc::clone(&store))
        .namespace(g.namespace.clone());
    if !backstops.is_empty() {
        match crate::open::catalog(g, constraints).await? {
            Some(c) => b = b.constraints(c),
            None => {
                let e = "--backstop needs a SQL database: the store's, or --constraints URL";
                return Err(Fail::new(crate::fail::USAGE, e));
            }
        }
    }
    let idem = b.build().map_err(|e| Fail::new(OTHER, e.to_string()))?;
    let names: Vec<&str> = backstops.iter().map(String::as_str).collect();
    match idem.verify(&names).await {
        Ok(warnings) => {
            let texts: Vec<String> = warnings.iter().map(ToString::to_string).collect();
            out.verified(store.name(), Ok(&texts[..]), strict);
            Ok(if strict && !texts.is_empty() { NO } else { OK })
        }
        Err(idem::Error::Verify(m)) => {
            out.verified(store.name(), Err(&m), strict);
            Ok(NO)
        }
        Err(e) => Err(Fail::idem("verify", e)),
    }
}
