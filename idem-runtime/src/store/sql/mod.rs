//! SQL record stores (SQLite, PostgreSQL, MySQL/MariaDB) through `sqlx`.
//!
//! One table holds the records, one object hands out fences:
//!
//! | column        | PostgreSQL    | MySQL/MariaDB      | SQLite            |
//! |---------------|---------------|--------------------|-------------------|
//! | `idem_key`    | `TEXT` PK     | `VARBINARY(768)` PK (byte-exact: no collation, no pad) | `TEXT` PK |
//! | `state`       | `SMALLINT` (0 in progress, 1 done) | `SMALLINT` | `INTEGER` |
//! | `owner`       | `BYTEA` (16)  | `BINARY(16)`       | `BLOB`            |
//! | `fence`       | `BIGINT`      | `BIGINT`           | `INTEGER`         |
//! | `fingerprint` | `BYTEA` (16)  | `BINARY(16)`       | `BLOB`            |
//! | `payload`     | `BYTEA`       | `LONGBLOB`         | `BLOB`            |
//! | `expires_at`  | `TIMESTAMPTZ` | `DATETIME(6)` (UTC) | `INTEGER` (µs since the epoch) |
//!
//! Fences come from a sequence (PostgreSQL), a table of 64 counters
//! `max(v + 1, now_µs)` picked by a hash of the key (MySQL/MariaDB), or a one-row
//! counter `max(v + 1, now_µs)` (SQLite). None of them is touched by `forget` or
//! `purge_expired`, so a key's fences never go backwards.
//!
//! Expiry is always computed by the database clock inside the statements
//! (`now()`, `UTC_TIMESTAMP(6)`, `unixepoch('subsec')`), never by the callers'
//! clocks, so several application hosts with skewed clocks agree.
//!
//! Migrations never run implicitly: call [`SqlStore::migrate`] or apply [`ddl`]
//! with your own migration tool, then [`Store::verify`] at start-up (a missing
//! table is an error naming it).
//!
//! # The claim, per dialect
//! - PostgreSQL: one statement. A CTE reads the live row; only when there is none
//!   does it `INSERT … ON CONFLICT (idem_key) DO UPDATE … WHERE expires_at <= now()
//!   RETURNING fence`, so duplicates and waiters stay read-only (no row lock, no
//!   transaction id, no log flush).
//! - MySQL/MariaDB: a `SELECT`; for a missing or expired key, one transaction with
//!   the slot's fence and an `INSERT … ON DUPLICATE KEY UPDATE` whose branches set
//!   `LAST_INSERT_ID` to say whether the key was taken (rows-affected cannot: the
//!   driver sets `CLIENT_FOUND_ROWS`). Not `INSERT IGNORE`, which would turn data
//!   errors such as truncation into warnings. Deadlocks (1213) and lock-wait
//!   timeouts (1205) are retried inside the store.
//! - SQLite: a `SELECT`; for a missing or expired key, a `BEGIN IMMEDIATE`
//!   transaction with the one-row counter and an `INSERT … ON CONFLICT DO UPDATE …
//!   WHERE … RETURNING`. The writers of one process take turns on an async lock
//!   rather than sleeping in SQLite's busy handler.
//!
//! Within one process, claims of one key take turns, a claim granted here answers
//! its local duplicates without a round trip until its owner completes, releases
//! or loses it, and queued claims share a finished-record read that started after
//! they arrived (see `local.rs`). Finished records are never cached.
//!
//! # Dialect differences users should know
//! - Fences: PostgreSQL's are sequence numbers (small, shared by all keys);
//!   MySQL's and SQLite's are microsecond timestamps bumped past the last one.
//!   Both only promise "larger than every earlier fence of this key".
//! - Keys are compared byte for byte everywhere (MySQL: `VARBINARY`, not a
//!   collation that would merge `A`/`a` or ignore trailing spaces).
//! - SQLite measures time in milliseconds (`unixepoch('subsec')`), the servers
//!   in microseconds.
//! - Backstops on SQLite must be named unique *indexes* (`CREATE UNIQUE INDEX
//!   uk_… ON …`): a `UNIQUE` clause in `CREATE TABLE` gets an `sqlite_autoindex_…`
//!   name, and SQLite errors name only table and columns, which
//!   [`SqlConstraints`] maps back to the index. MySQL index names are per table:
//!   give backstops names unique in the database.
//! - MariaDB does not fill `constraint()` on its errors; the name is parsed from
//!   the message (after the last `for key '`, so a duplicated value containing
//!   that text does not fool it).
//!
//! # Connection pools
//! sqlx pools ping every connection before handing it out (`test_before_acquire`,
//! on by default). Measured on the development machine, that ping is 17–29% of the
//! cost of one of these statements, and it buys little: a dead connection makes
//! the statement fail as `StoreError::Unavailable`, which the guard retries with
//! the same owner (every store operation is idempotent per owner). The
//! constructors here (`connect`, `open`) therefore turn it off; when you build the
//! pool yourself, consider `.test_before_acquire(false)` too.
//!
//! [`Store::verify`]: crate::store::Store::verify

use std::time::Duration;

use super::{Claim, DoneRecord, Owner, RecordState, StoreError};
use crate::fingerprint::Fingerprint;
use crate::outcome::Fence;

/// The driver calls of one dialect module, which differ only in the pool and
/// row types: `execute`, `exists`, `fetch` and `raw` (a row as [`RawRow`]).
/// `$pool` reaches the sqlx pool from the dialect's pool value `$p`; `$turn`
/// (from `$w`, the same value) is held while a write runs: SQLite's writer turn.
/// The expanding module imports `Row`, `Arg`, `Sent`, `bind`, `Stmt`, `RawRow`,
/// `map_err` and `StoreError`.
macro_rules! driver_calls {
    (
        pool: $Pool:ty,
        row: $Row:ty,
        state: $State:ty,
        sqlx_pool: |$p:ident| $pool:expr,
        write_turn: |$w:ident| $turn:expr $(,)?
    ) => {
        pub(super) async fn execute(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<u64, sqlx::Error> {
            let _turn = {
                let $w = $p;
                $turn
            };
            Ok(bind(sent, stmt, args).execute($pool).await?.rows_affected())
        }

        pub(super) async fn exists(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<bool, sqlx::Error> {
            Ok(bind(sent, stmt, args)
                .fetch_optional($pool)
                .await?
                .is_some())
        }

        pub(super) async fn fetch(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<Option<RawRow>, StoreError> {
            let row = bind(sent, stmt, args)
                .fetch_optional($pool)
                .await
                .map_err(map_err)?;
            row.as_ref().map(raw).transpose()
        }

        fn raw(row: &$Row) -> Result<RawRow, StoreError> {
            Ok(RawRow {
                state: i64::from(row.try_get::<$State, _>("state").map_err(map_err)?),
                owner: row.try_get("owner").map_err(map_err)?,
                fence: row.try_get("fence").map_err(map_err)?,
                fingerprint: row.try_get("fingerprint").map_err(map_err)?,
                payload: row.try_get("payload").map_err(map_err)?,
                remaining_us: row.try_get("remaining_us").map_err(map_err)?,
            })
        }
    };
}

mod catalog;
mod ddl;
mod local;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use catalog::{EXPRESSION, SqlConstraints};
pub use ddl::ddl;
pub use store::{MAX_KEY_BYTES, SqlStore};

/// Rows deleted per `purge_expired` statement.
const PURGE_BATCH: i64 = 1_000;
/// Upper bound on the time one `purge_expired` call keeps deleting.
const PURGE_BUDGET: Duration = Duration::from_secs(10);
/// Times a claim re-reads when the row changed between its write and its read.
const CLAIM_ROUNDS: usize = 8;

/// The SQL dialects idem speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// PostgreSQL 12 or later.
    Postgres,
    /// MySQL 8 or MariaDB 10.5 or later.
    MySql,
    /// SQLite 3.42 or later (the bundled one).
    Sqlite,
}

/// The names of idem's tables. Identifiers are checked (`[A-Za-z_][A-Za-z0-9_]*`,
/// at most 63 bytes) because they are spliced into SQL text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    schema: Option<String>,
    records: String,
    fences: String,
}

impl Default for TableNames {
    fn default() -> Self {
        TableNames {
            schema: None,
            records: "idem_records".into(),
            fences: "idem_fences".into(),
        }
    }
}

impl TableNames {
    /// Records in `records`, fences in `<records>_fences`.
    pub fn new(records: &str) -> Result<Self, StoreError> {
        check_ident(records)?;
        let fences = format!("{records}_fences");
        check_ident(&fences)?;
        Ok(TableNames {
            schema: None,
            records: records.to_owned(),
            fences,
        })
    }

    /// Overrides the fence table (MySQL/SQLite) or sequence (PostgreSQL) name.
    pub fn fences(mut self, fences: &str) -> Result<Self, StoreError> {
        check_ident(fences)?;
        self.fences = fences.to_owned();
        Ok(self)
    }

    /// Puts both objects in a PostgreSQL schema (ignored by the other dialects,
    /// where the connection's database decides).
    pub fn schema(mut self, schema: &str) -> Result<Self, StoreError> {
        check_ident(schema)?;
        self.schema = Some(schema.to_owned());
        Ok(self)
    }

    /// The records table name (unqualified).
    pub fn records_name(&self) -> &str {
        &self.records
    }

    /// The fences table or sequence name (unqualified).
    pub fn fences_name(&self) -> &str {
        &self.fences
    }

    /// The schema, if any.
    pub fn schema_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    fn qualify(&self, dialect: Dialect, name: &str) -> String {
        match (&self.schema, dialect) {
            (Some(s), Dialect::Postgres) => format!("{s}.{name}"),
            _ => name.to_owned(),
        }
    }

    pub(crate) fn records(&self, d: Dialect) -> String {
        self.qualify(d, &self.records)
    }

    pub(crate) fn fences_q(&self, d: Dialect) -> String {
        self.qualify(d, &self.fences)
    }
}

fn check_ident(s: &str) -> Result<(), StoreError> {
    let mut chars = s.chars();
    let ok = s.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Config(format!(
            "`{s}` is not a plain SQL identifier (letters, digits, `_`, at most 63 bytes)"
        )))
    }
}

/// A record row as every dialect reads it back.
#[derive(Debug)]
pub(crate) struct RawRow {
    pub(crate) state: i64,
    pub(crate) owner: Vec<u8>,
    pub(crate) fence: i64,
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) payload: Option<Vec<u8>>,
    pub(crate) remaining_us: i64,
}

const PENDING: i64 = 0;
const DONE: i64 = 1;

fn bytes16(what: &str, b: &[u8]) -> Result<[u8; 16], StoreError> {
    b.try_into()
        .map_err(|_| StoreError::Codec(format!("{what} is {} bytes, expected 16", b.len())))
}

impl RawRow {
    fn remaining(&self) -> Duration {
        Duration::from_micros(self.remaining_us.max(0) as u64)
    }

    /// The row as an operator sees it. Rejects anything idem did not write.
    pub(crate) fn into_state(self) -> Result<RecordState, StoreError> {
        let owner = Owner::from_bytes(bytes16("owner", &self.owner)?);
        let fingerprint = Fingerprint(bytes16("fingerprint", &self.fingerprint)?);
        if self.fence <= 0 {
            return Err(StoreError::Codec(format!(
                "fence {} is not positive",
                self.fence
            )));
        }
        let fence = Fence::new(self.fence as u64);
        let remaining = self.remaining();
        match self.state {
            PENDING => Ok(RecordState::InProgress {
                owner,
                fence,
                fingerprint,
                remaining,
            }),
            DONE => {
                let payload = self
                    .payload
                    .ok_or_else(|| StoreError::Codec("finished record without payload".into()))?;
                Ok(RecordState::Done {
                    record: DoneRecord {
                        fingerprint,
                        fence,
                        owner,
                        payload,
                    },
                    remaining,
                })
            }
            s => Err(StoreError::Codec(format!("unknown record state {s}"))),
        }
    }

    /// The answer a claim by `me` gets when it finds this live row.
    pub(crate) fn into_claim(self, me: Owner) -> Result<Claim, StoreError> {
        Ok(match self.into_state()? {
            RecordState::Done { record, .. } => Claim::Done(record),
            RecordState::InProgress { owner, fence, .. } if owner == me => Claim::Claimed { fence },
            RecordState::InProgress {
                fingerprint,
                remaining,
                ..
            } => Claim::Busy {
                fingerprint,
                remaining,
            },
        })
    }
}

/// Whole microseconds of `d`, saturating, as SQL drivers bind them.
pub(crate) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2)
}

/// Maps a driver error to the store's error kinds.
pub(crate) fn map_err(e: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    match e {
        E::ColumnDecode { .. }
        | E::Decode(_)
        | E::TypeNotFound { .. }
        | E::ColumnNotFound(_)
        | E::ColumnIndexOutOfBounds { .. } => StoreError::Codec(e.to_string()),
        E::Configuration(_) => StoreError::Config(e.to_string()),
        E::Database(db) if is_missing_object(&*db) => StoreError::Config(format!(
            "{} (run `migrate()` or apply `idem::sql::ddl()`)",
            db.message()
        )),
        other => StoreError::Unavailable(other.to_string()),
    }
}

fn is_missing_object(db: &dyn sqlx::error::DatabaseError) -> bool {
    let code = db.code();
    let code = code.as_deref().unwrap_or("");
    // PostgreSQL undefined_table / undefined_column; MySQL 1146 (42S02) / 1054 (42S22).
    matches!(code, "42P01" | "42703" | "42S02" | "42S22")
        || db.message().starts_with("no such table")
        || db.message().starts_with("no such column")
}

/// Whether an error is a deadlock or lock timeout the statement may simply retry:
/// SQLSTATE 40001 (MariaDB/MySQL deadlock 1213, PostgreSQL serialization
/// failure), 40P01 (PostgreSQL deadlock), MariaDB's lock-wait timeout (1205,
/// SQLSTATE HY000: recognised by its message), SQLite busy (5, 517).
pub(crate) fn is_retryable_conflict(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    let code = db.code();
    matches!(code.as_deref(), Some("40001" | "40P01" | "5" | "517"))
        || db.message().contains("Deadlock found")
        || db.message().starts_with("Lock wait timeout exceeded")
}

/// Runs `f` again after short pauses while it fails with a deadlock (MariaDB
/// picks a victim among concurrent `INSERT … ON DUPLICATE KEY UPDATE`s of one key).
pub(crate) async fn retry_conflicts<T, F, Fut>(mut f: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let mut attempt = 0u32;
    loop {
        match f().await {
            Err(e) if is_retryable_conflict(&e) && attempt < 8 => {
                attempt += 1;
                // Jittered by the attempt number and the clock's low bits.
                let jitter = super::unix_micros() % 1_000;
                tokio::time::sleep(Duration::from_micros(500 * u64::from(attempt) + jitter)).await;
            }
            r => return r,
        }
    }
}

/// Runs a multi-statement transaction in a task of its own, so a caller that
/// stops waiting (the guard's operation timeout, a dropped request) cannot cut it
/// between `BEGIN` and `COMMIT`. A cut inside sqlx's `begin()` (after `BEGIN`
/// was sent, before the transaction object exists) returns the connection to
/// the pool with the transaction still open: every later statement on it runs
/// inside that transaction and never commits, and its locks stay. The stress run
/// showed exactly that (a `DROP TABLE` waiting forever for a metadata lock held
/// by an idle pooled connection). Detached, the transaction always finishes; a
/// claim it applied for an owner whose caller gave up is found again by that
/// owner's retry, or lapses with its lease.
#[cfg(any(feature = "mysql", feature = "sqlite"))]
pub(crate) async fn detached<T, Fut>(tx: Fut) -> Result<T, sqlx::Error>
where
    T: Send + 'static,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>> + Send + 'static,
{
    match tokio::spawn(tx).await {
        Ok(r) => r,
        Err(e) => Err(sqlx::Error::Protocol(format!(
            "transaction task failed: {e}"
        ))),
    }
}

/// The deadline-bounded purge loop shared by every dialect: `batch` deletes up to
/// [`PURGE_BATCH`] expired rows and returns how many it deleted.
pub(crate) async fn purge_loop<F, Fut>(mut batch: F) -> Result<u64, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, sqlx::Error>>,
{
    let deadline = std::time::Instant::now() + PURGE_BUDGET;
    let mut total = 0;
    loop {
        let n = batch().await.map_err(map_err)?;
        total += n;
        if n < PURGE_BATCH as u64 || std::time::Instant::now() >= deadline {
            return Ok(total);
        }
    }
}

/// The `verify()` error for an idem table that a probe could not read.
pub(crate) fn missing(name: &str, e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Database(db) => StoreError::Config(format!(
            "idem table `{name}` is missing or malformed: {} (run `migrate()` or apply `idem::sql::ddl()`)",
            db.message()
        )),
        other => map_err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_checked() {
        assert!(TableNames::new("idem_records").is_ok());
        assert!(TableNames::new("x; DROP TABLE y").is_err());
        assert!(TableNames::new("1abc").is_err());
        assert!(TableNames::new("").is_err());
        assert!(TableNames::default().schema("a.b").is_err());
        assert!(TableNames::new(&"a".repeat(64)).is_err());
    }

    #[test]
    fn garbage_rows_are_codec_errors() {
        let row = |state, owner: usize, payload: Option<Vec<u8>>| RawRow {
            state,
            owner: vec![1; owner],
            fence: 5,
            fingerprint: vec![0; 16],
            payload,
            remaining_us: 10,
        };
        assert!(matches!(
            row(7, 16, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(0, 3, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(1, 16, None).into_state(),
            Err(StoreError::Codec(_))
        ));
        assert!(matches!(
            row(1, 16, Some(vec![1])).into_state(),
            Ok(RecordState::Done { .. })
        ));
        let me = Owner::from_bytes([1; 16]);
        assert_eq!(
            row(0, 16, None).into_claim(me).unwrap(),
            Claim::Claimed {
                fence: Fence::new(5)
            }
        );
    }
}

/// A real MariaDB deadlock is recognised as retryable (the class of error
/// `retry_conflicts` repeats). Needs the MariaDB of the test machine
/// (`IDEM_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`).
#[cfg(all(test, feature = "mysql"))]
mod mariadb_deadlock {
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deadlock_victim_is_retryable() {
        let url = std::env::var("IDEM_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into());
        let pool = sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(3)
            .connect(&url)
            .await
            .unwrap_or_else(|e| panic!("MariaDB at {url} is required for this test: {e}"));
        let t = format!("idem_deadlock_{}", uuid::Uuid::new_v4().simple());
        let run = |sql: String| {
            let pool = pool.clone();
            async move {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .map(drop)
            }
        };
        run(format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"
        ))
        .await
        .unwrap();
        run(format!("INSERT INTO {t} VALUES (1, 0), (2, 0)"))
            .await
            .unwrap();
        let (mut a, mut b) = (pool.begin().await.unwrap(), pool.begin().await.unwrap());
        let upd =
            |id: i32| sqlx::AssertSqlSafe(format!("UPDATE {t} SET v = v + 1 WHERE id = {id}"));
        sqlx::query(upd(1)).execute(&mut *a).await.unwrap();
        sqlx::query(upd(2)).execute(&mut *b).await.unwrap();
        // Each now wants the other's row: InnoDB picks a victim (1213).
        let (ra, rb) = tokio::join!(sqlx::query(upd(2)).execute(&mut *a), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            sqlx::query(upd(1)).execute(&mut *b).await
        });
        let victim = ra
            .err()
            .or(rb.err())
            .expect("one transaction is the deadlock victim");
        assert!(super::is_retryable_conflict(&victim), "{victim:?}");
        drop((a, b));
        run(format!("DROP TABLE {t}")).await.unwrap();
    }
}
