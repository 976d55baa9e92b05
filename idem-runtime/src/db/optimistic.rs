//! The optimistic lock over a version column: one conditional
//! update in the caller's transaction,
//! `UPDATE t SET version = version + 1, stock = stock + ? [, last_request = ?]
//! WHERE key = ? AND version = ? AND stock >= ?`.
//!
//! The expected version comes from the *request* (what the client read), so a
//! repeated request carries the same, by now stale, version and can never
//! apply twice. Zero rows changed does not mean "duplicate" (seed pitfall 4):
//! the row is read again to tell the cases apart, each a distinct
//! [`Versioned`] the caller maps to a response:
//!
//! - the version moved and the row names this request (the optional request
//!   column) → [`Versioned::AlreadyApplied`];
//! - the version moved otherwise → [`Versioned::Conflict`] (someone else
//!   changed it: re-read and ask the user);
//! - the version matches but a requirement (`stock >= n`) is false →
//!   [`Versioned::PreconditionFailed`];
//! - no row → `Error::NotFound`.
//!
//! Retrying with a fresh read is opt-in ([`Optimistic::retries`]) and only
//! right for changes that do not depend on what the client saw (a counter).
//! It is refused together with a request column (`Error::Config`, before any
//! statement): the column remembers only the *last* request, so after r1 and
//! r2 a repeated r1 finds r2 there, looks like a stranger whose version moved,
//! and the retry at the fresh version would apply r1 a second time. Keeping
//! the deduplication means answering that repeat as a
//! [`Versioned::Conflict`], which only the request column without retries
//! does.
//! The re-read is a locking read on MySQL/MariaDB (`LOCK IN SHARE MODE`), so
//! `REPEATABLE READ`'s snapshot cannot hide the version that moved.

use super::caller_tx::tx_error;
use super::{Arg, Dialect, Ident, SqlConn as _, TxDb};
use crate::error::Error;
use crate::observe::instrument::Fenced;
use crate::observe::{CallOutcome, Observer, Technique};
use crate::sql_kernel::arg::placeholders;

/// What an optimistic update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versioned {
    /// The row was changed; its version is now `version`.
    Applied {
        /// The new version.
        version: i64,
    },
    /// This request changed the row before (its request column names it).
    AlreadyApplied {
        /// The row's version now.
        version: i64,
    },
    /// The row's version is not the expected one: changed by someone else.
    Conflict {
        /// The row's version now.
        current: i64,
    },
    /// The version matched, but a requirement (`column >= n`) did not hold.
    PreconditionFailed {
        /// The row's (unchanged) version.
        version: i64,
    },
}

impl Fenced for Result<Versioned, Error> {
    fn fence(&self) -> Option<crate::fence::Fence> {
        None
    }
}

/// An optimistic update of one row, configured once (identifiers checked)
/// and applied per request with [`apply`](Self::apply).
///
/// ```
/// use idem::db::optimistic::Optimistic;
/// let deduct = Optimistic::new("t_sku", "sku_id", "version")?
///     .request_column("last_req")?
///     .add("stock", -2)?
///     .at_least("stock", 2)?;
/// # Ok::<(), idem::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Optimistic<'h> {
    table: Ident,
    key: Ident,
    version: Ident,
    request: Option<Ident>,
    adds: Vec<(Ident, i64)>,
    at_least: Vec<(Ident, i64)>,
    retries: u32,
    observer: Observer<'h>,
}

fn ident(s: &str) -> Result<Ident, Error> {
    Ident::new(s).map_err(|e| Error::Config(e.to_string()))
}

impl<'h> Optimistic<'h> {
    /// The row of `table` whose `key_column` is the key, versioned by
    /// `version_column` (an integer).
    pub fn new(table: &str, key_column: &str, version_column: &str) -> Result<Self, Error> {
        Ok(Optimistic {
            table: ident(table)?,
            key: ident(key_column)?,
            version: ident(version_column)?,
            request: None,
            adds: Vec::new(),
            at_least: Vec::new(),
            retries: 0,
            observer: Observer::default(),
        })
    }

    /// A text column the update sets to the request id, so a repeated request
    /// is recognised ([`Versioned::AlreadyApplied`]) while no later change
    /// overwrote it; after a later change it is a [`Versioned::Conflict`]
    /// (its expected version is stale), never applied again. Not combinable
    /// with [`retries`](Self::retries) (see there).
    pub fn request_column(mut self, column: &str) -> Result<Self, Error> {
        self.request = Some(ident(column)?);
        Ok(self)
    }

    /// `column = column + delta`.
    pub fn add(mut self, column: &str, delta: i64) -> Result<Self, Error> {
        self.adds.push((ident(column)?, delta));
        Ok(self)
    }

    /// Requires `column >= n` before the change (the business precondition).
    pub fn at_least(mut self, column: &str, n: i64) -> Result<Self, Error> {
        self.at_least.push((ident(column)?, n));
        Ok(self)
    }

    /// On [`Versioned::Conflict`], read the current version and try again, up
    /// to `n` times. Only for changes that do not depend on what the client
    /// saw (a counter), and which carry no request identity: with a
    /// [`request_column`](Self::request_column) too, [`apply`](Self::apply)
    /// returns `Error::Config` before any statement. The column names only
    /// the last request, so a repeat that arrives after another request would
    /// be retried at the fresh version and applied twice; deduplicate such
    /// changes with a unique request-id row in the same transaction
    /// (`InsertOnce`, the transactional guard) instead.
    ///
    /// ```
    /// use idem_runtime::db::optimistic::Optimistic;
    /// // A counter: retried on a moved version, no request identity.
    /// let views = Optimistic::new("t_page", "page_id", "version")?.add("views", 1)?.retries(3);
    /// # let _ = views;
    /// # Ok::<(), idem_runtime::Error>(())
    /// ```
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// Counts calls under `idem`'s statistics (default: process-wide).
    pub fn handle(mut self, idem: &'h crate::handle::Idem) -> Self {
        self.observer = idem.observer();
        self
    }

    /// Applies the change to the row `key` in the caller's transaction if its
    /// version is `expected` (and the requirements hold); `request` is the
    /// request id written to the request column.
    pub async fn apply<DB: TxDb>(
        &self,
        tx: &mut sqlx::Transaction<'_, DB>,
        key: Arg<'_>,
        expected: i64,
        request: &str,
    ) -> Result<Versioned, Error> {
        let name = key.render();
        let n = name.as_str();
        let op = move || async move {
            let r = match self.refused() {
                Some(e) => Err(e),
                None => self.attempts(tx, key, expected, request, n).await,
            };
            let label = match &r {
                Ok(Versioned::Applied { .. }) => CallOutcome::Applied,
                Ok(Versioned::AlreadyApplied { .. }) => CallOutcome::AlreadyApplied,
                Ok(Versioned::Conflict { .. }) => CallOutcome::Conflict,
                Ok(Versioned::PreconditionFailed { .. }) => CallOutcome::PreconditionFailed,
                Err(_) => CallOutcome::Failed,
            };
            (label, r)
        };
        self.observer
            .run(Technique::Optimistic, self.table.as_str(), &name, op)
            .await
    }

    /// Retries with a request column could apply a repeated request twice
    /// (see [`retries`](Self::retries)).
    fn refused(&self) -> Option<Error> {
        let column = self.request.as_ref()?;
        (self.retries > 0).then(|| {
            Error::Config(format!(
                "optimistic update of `{}`: `retries({})` with the request column `{column}` could \
                 apply a repeated request twice (the column names only the last request); \
                 drop the retries, or deduplicate with a unique request-id row",
                self.table, self.retries
            ))
        })
    }

    async fn attempts<DB: TxDb>(
        &self,
        tx: &mut sqlx::Transaction<'_, DB>,
        key: Arg<'_>,
        mut expected: i64,
        request: &str,
        name: &str,
    ) -> Result<Versioned, Error> {
        let mut conn = tx.any();
        let d = DB::DIALECT;
        let (update, read) = (self.update_sql(d), self.read_sql(d));
        let err = |e| tx_error(name, e);
        let mut left = self.retries;
        loop {
            let mut args: Vec<Arg<'_>> = self.adds.iter().map(|(_, n)| Arg::Int(*n)).collect();
            if self.request.is_some() {
                args.push(Arg::Text(request));
            }
            args.push(key);
            args.push(Arg::Int(expected));
            args.extend(self.at_least.iter().map(|(_, n)| Arg::Int(*n)));
            if conn.execute(&update, &args).await.map_err(err)? == 1 {
                return Ok(Versioned::Applied {
                    version: expected + 1,
                });
            }
            let mut args = vec![Arg::Text(request)];
            args.extend(self.at_least.iter().map(|(_, n)| Arg::Int(*n)));
            args.push(key);
            let row = conn.ints(&read, &args).await.map_err(err)?;
            let Some(&[version, mine, holds]) = row.as_deref() else {
                return Err(Error::NotFound {
                    key: format!("{}:{name}", self.table),
                });
            };
            if version == expected && holds == 0 {
                return Ok(Versioned::PreconditionFailed { version });
            }
            if mine == 1 {
                return Ok(Versioned::AlreadyApplied { version });
            }
            if left == 0 || version == expected {
                return Ok(Versioned::Conflict { current: version });
            }
            left -= 1;
            expected = version;
        }
    }

    fn update_sql(&self, d: Dialect) -> String {
        let v = &self.version;
        let mut set = format!("{v} = {v} + 1");
        for (c, _) in &self.adds {
            set.push_str(&format!(", {c} = {c} + ?"));
        }
        if let Some(r) = &self.request {
            set.push_str(&format!(", {r} = ?"));
        }
        let mut cond = format!("{} = ? AND {v} = ?", self.key);
        for (c, _) in &self.at_least {
            cond.push_str(&format!(" AND {c} >= ?"));
        }
        placeholders(d, &format!("UPDATE {} SET {set} WHERE {cond}", self.table))
    }

    /// The version, whether the request column names this request, whether
    /// the requirements hold.
    fn read_sql(&self, d: Dialect) -> String {
        let mine = match &self.request {
            Some(r) => format!("CASE WHEN {r} = ? THEN 1 ELSE 0 END"),
            None => "CASE WHEN ? IS NULL THEN 1 ELSE 0 END".to_owned(),
        };
        let mut holds = String::from("1 = 1");
        for (c, _) in &self.at_least {
            holds.push_str(&format!(" AND {c} >= ?"));
        }
        let lock = if d == Dialect::MySql {
            " LOCK IN SHARE MODE"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {v}, {mine}, CASE WHEN {holds} THEN 1 ELSE 0 END FROM {t} WHERE {k} = ?{lock}",
            v = self.version,
            t = self.table,
            k = self.key
        );
        placeholders(d, &sql)
    }
}
