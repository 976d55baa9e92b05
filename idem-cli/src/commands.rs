//! The subcommands: each reads or changes the store through the library's
//! own calls (`Store::inspect`, `release`, `forget`, `purge_report`,
//! `census`, `Idem::verify`, `idem::sql::ddl`), keys rendered by its key
//! writer (`idem::Key::from_parts`).

use std::sync::Arc;
use std::time::Duration;

use idem::db::Dialect;
use idem::store::RecordState;
use idem::{Idem, Key, KeyPart, Store};
use serde_json::json;

use crate::args::{Cli, Command, DialectArg, Global, KeyArgs};
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
    let budget = Duration::from_secs(g.timeout.max(1));
    let messaging = matches!(cli.command, Command::Outbox { .. } | Command::Consume);
    let work = async {
        match &cli.command {
            Command::Outbox {
                action,
                parked,
                limit,
            } => return crate::pipeline::outbox(g, action.as_ref(), *parked, *limit, out).await,
            Command::Consume => return crate::pipeline::consume(g, out).await,
            _ => {}
        }
        let store = crate::open::store(g).await?;
        match &cli.command {
            Command::Inspect(k) => inspect(&*store, &key(g, k), out).await,
            Command::Forget { key: k, force } => forget(&*store, &key(g, k), *force, out).await,
            Command::Purge { dry_run } => purge(&*store, *dry_run, out).await,
            Command::Stats { metrics, top } => {
                stats(&*store, g, metrics.as_deref(), *top, out).await
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
    };
    tokio::time::timeout(budget, work)
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
                    "the store at `{at}` did not answer within {}s (--timeout); check that \
                     the server is running and reachable from this host",
                    budget.as_secs()
                ),
            ))
        })
}

/// The key of `KEY`, or of `--scene` and `--part`s under `--namespace`.
fn key(g: &Global, k: &KeyArgs) -> String {
    match (&k.key, &k.scene) {
        (Some(key), _) => key.clone(),
        (None, scene) => {
            let parts: Vec<&(dyn KeyPart + Sync)> =
                k.parts.iter().map(|p| p as &(dyn KeyPart + Sync)).collect();
            let scene = scene.as_deref().unwrap_or_default();
            Key::from_parts(&g.namespace, scene, &parts)
                .as_str()
                .to_owned()
        }
    }
}

async fn inspect(store: &dyn Store, key: &str, out: Out) -> Result<u8, Fail> {
    let state = store
        .inspect(key)
        .await
        .map_err(|e| Fail::store("inspect", e))?;
    out.record(key, state.as_ref());
    Ok(if state.is_some() { OK } else { NO })
}

/// Owner-safe: a live claim is removed only with `--force`, and then by an
/// owner-checked release of the very claim inspected (a claim taken or
/// finished meanwhile is left alone); a finished record is forgotten.
async fn forget(store: &dyn Store, key: &str, force: bool, out: Out) -> Result<u8, Fail> {
    let state = store
        .inspect(key)
        .await
        .map_err(|e| Fail::store("inspect", e))?;
    let removed = match &state {
        None => {
            out.forgot(key, None, "no record: nothing removed");
            return Ok(NO);
        }
        Some(RecordState::InProgress { remaining, .. }) if !force => {
            let why = format!(
                "refused: a live in-progress claim (lease left {}); its body may still run. \
                 Use --force once you know its process is gone",
                render::duration(*remaining)
            );
            out.forgot(key, state.as_ref(), &why);
            return Ok(NO);
        }
        Some(RecordState::InProgress { owner, .. }) => {
            let released = store
                .release(key, *owner)
                .await
                .map_err(|e| Fail::store("release", e))?;
            released == idem::store::Owned::Applied
        }
        Some(RecordState::Done { .. }) => store
            .forget(key)
            .await
            .map_err(|e| Fail::store("forget", e))?,
    };
    if removed {
        out.forgot(key, state.as_ref(), "removed");
        Ok(OK)
    } else {
        let why = "nothing removed: the record changed meanwhile (finished, or taken over)";
        out.forgot(key, state.as_ref(), why);
        Ok(NO)
    }
}

async fn purge(store: &dyn Store, dry_run: bool, out: Out) -> Result<u8, Fail> {
    let report = store
        .purge_report(dry_run)
        .await
        .map_err(|e| Fail::store("purge", e))?;
    out.purge(store.name(), dry_run, &report);
    Ok(OK)
}

async fn stats(
    store: &dyn Store,
    g: &Global,
    metrics: Option<&str>,
    top: usize,
    out: Out,
) -> Result<u8, Fail> {
    let census = store
        .census(&g.namespace)
        .await
        .map_err(|e| Fail::store("stats", e))?;
    let top_keys = match metrics {
        Some(url) => Some(crate::top_keys::fetch(url, top).await?),
        None => None,
    };
    out.stats(&g.namespace, &census, top_keys.as_deref());
    Ok(OK)
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
