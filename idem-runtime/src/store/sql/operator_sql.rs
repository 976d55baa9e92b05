//! What operators ask of a SQL store beyond the protocol: the live keys of a
//! namespace (`idem ls`; the in-progress ones through the index on
//! `(state, idem_key)`), the expired records of one namespace (`idem purge
//! -n`), and the conditional delete of `idem forget`. Built per call: these
//! run from the command line, never on the request path.
//!
//! The prefix is compared with `left`/`substr` as in `census_sql.rs` (an
//! escaped namespace holds `%`, a `LIKE` wildcard).

use super::bind::Arg;
use super::errors::map_err;
use super::key::check_key;
use super::mysql_sql::MYSQL_NOW;
use super::stmt::Stmt;
use super::{Dialect, PURGE_BATCH, PURGE_BUDGET, SqlStore, purge_loop};
use crate::store::{Counted, ListFilter, RecordState, StoreError};

fn now(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "statement_timestamp()",
        Dialect::MySql => MYSQL_NOW,
        Dialect::Sqlite => "CAST(unixepoch('subsec') * 1000000 AS INTEGER)",
    }
}

/// `WHERE` text comparing the key's first characters with the prefix: binds
/// 1 and 2 (prefix, its length) on PostgreSQL and SQLite, the length then
/// the prefix on MySQL.
fn starts(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "left(idem_key, $2::INT4) = $1",
        Dialect::MySql => "LEFT(idem_key, ?) = ?",
        Dialect::Sqlite => "substr(idem_key, 1, ?2) = ?1",
    }
}

/// The prefix binds [`starts`] reads, in its order.
fn prefix_args(d: Dialect, prefix: &str) -> Vec<Arg<'_>> {
    match d {
        Dialect::MySql => vec![Arg::Int(prefix.len() as i64), Arg::Text(prefix)],
        _ => vec![Arg::Text(prefix), Arg::Int(prefix.chars().count() as i64)],
    }
}

impl SqlStore {
    pub(super) async fn list_keys(
        &self,
        namespace: &str,
        filter: ListFilter<'_>,
    ) -> Result<Vec<(String, Counted)>, StoreError> {
        let d = self.dialect;
        let t = self.names.records(d);
        let state = if filter.in_progress_only {
            "state = 0 AND "
        } else {
            ""
        };
        let (key, st, limit) = match d {
            Dialect::Postgres => ("idem_key", "state::INT8", "$3"),
            Dialect::MySql => (
                "CAST(idem_key AS CHAR CHARACTER SET utf8mb4)",
                "CAST(state AS SIGNED)",
                "?",
            ),
            Dialect::Sqlite => ("idem_key", "state", "?3"),
        };
        let stmt = Stmt::from(format!(
            "SELECT {key}, {st} FROM {t} WHERE {state}expires_at > {now} AND {starts} \
             ORDER BY idem_key LIMIT {limit}",
            now = now(d),
            starts = starts(d),
        ));
        let prefix = filter.key_prefix(namespace);
        let mut args = prefix_args(d, &prefix);
        args.push(Arg::Int(i64::try_from(filter.max()).unwrap_or(i64::MAX)));
        let rows = dispatch!(&self.pool, |p, m| m::keys(p, &self.sent, &stmt, &args)
            .await)?;
        Ok(rows
            .into_iter()
            .map(|(k, s)| {
                let s = if s == 0 {
                    Counted::InProgress
                } else {
                    Counted::Done
                };
                (k, s)
            })
            .collect())
    }

    pub(super) async fn forget_seen(
        &self,
        key: &str,
        seen: &RecordState,
    ) -> Result<bool, StoreError> {
        check_key(self.dialect, key)?;
        let d = self.dialect;
        let t = self.names.records(d);
        let text = match d {
            Dialect::Postgres => format!(
                "DELETE FROM {t} WHERE idem_key = $1 AND state = $2::INT8 AND owner = $3 \
                 AND fence = $4 AND fingerprint = $5"
            ),
            Dialect::MySql => format!(
                "DELETE FROM {t} WHERE idem_key = ? AND state = ? AND owner = ? AND fence = ? \
                 AND fingerprint = ?"
            ),
            Dialect::Sqlite => format!(
                "DELETE FROM {t} WHERE idem_key = ?1 AND state = ?2 AND owner = ?3 \
                 AND fence = ?4 AND fingerprint = ?5"
            ),
        };
        let id = seen.identity();
        let owner = id.owner.to_bytes();
        let fence = i64::try_from(id.fence.get()).unwrap_or(i64::MAX);
        let args = [
            Arg::Text(key),
            Arg::Int(i64::from(id.done)),
            Arg::Bytes(&owner),
            Arg::Int(fence),
            Arg::Bytes(&id.fingerprint.0),
        ];
        self.local.drop_key(key);
        let n = self
            .execute(&Stmt::from(text), &args)
            .await
            .map_err(map_err)?;
        Ok(n > 0)
    }

    pub(super) async fn purge_prefix(
        &self,
        namespace: &str,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        let d = self.dialect;
        let t = self.names.records(d);
        let (now, starts) = (now(d), starts(d));
        let prefix = crate::key::namespace_prefix(namespace);
        let args = prefix_args(d, &prefix);
        if dry_run {
            let stmt = Stmt::from(format!(
                "SELECT COUNT(*) FROM {t} WHERE expires_at <= {now} AND {starts}"
            ));
            let n = dispatch!(&self.pool, |p, m| m::count(p, &self.sent, &stmt, &args)
                .await)?;
            return Ok(u64::try_from(n).unwrap_or(0));
        }
        let stmt = Stmt::from(match d {
            Dialect::Postgres => format!(
                "DELETE FROM {t} WHERE idem_key IN (\
                   SELECT idem_key FROM {t} WHERE expires_at <= {now} AND {starts} \
                   LIMIT {PURGE_BATCH} FOR UPDATE SKIP LOCKED) \
                 AND expires_at <= {now}"
            ),
            Dialect::MySql => format!(
                "DELETE FROM {t} WHERE expires_at <= {now} AND {starts} \
                 ORDER BY expires_at LIMIT {PURGE_BATCH}"
            ),
            Dialect::Sqlite => format!(
                "DELETE FROM {t} WHERE rowid IN (\
                   SELECT rowid FROM {t} WHERE expires_at <= {now} AND {starts} \
                   LIMIT {PURGE_BATCH})"
            ),
        });
        let deadline = std::time::Instant::now() + PURGE_BUDGET;
        purge_loop(deadline, || self.execute(&stmt, &args)).await
    }
}
