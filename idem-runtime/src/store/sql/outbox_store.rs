//! The outbox relay's statements on a [`SqlStore`]'s pool (feature `rabbitmq`
//! or `nats`): claim due messages, mark them sent, reschedule or park a failed
//! one, read the gauges. Text in `outbox_sql.rs`; what the relay does with
//! them in `crate::outbox`. Each call is one store operation the relay runs
//! through the execution layer (timeout, breaker, retries), so each is safe to
//! repeat: a claim repeated after a lost reply leaves the first claim's rows to
//! lapse with their lease, the others set values rather than add to them.

use super::SqlStore;
use super::errors::map_err;
use super::outbox_sql as q;
use super::pool::Pool;
use crate::sql_kernel::arg::bind_args;
use crate::sql_kernel::{Arg, Dialect, retry_conflicts};
use crate::store::StoreError;

/// One claimed message.
#[derive(Debug, Clone)]
pub(crate) struct OutboxRow {
    pub(crate) seq: i64,
    pub(crate) id: String,
    pub(crate) topic: String,
    pub(crate) business_id: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) attempts: i64,
}

/// The outbox gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OutboxCounts {
    pub(crate) pending: i64,
    pub(crate) oldest_us: i64,
    pub(crate) parked: i64,
}

/// An argument as a literal of an unflushed PostgreSQL statement.
#[cfg(feature = "postgres")]
fn lit<'a>(a: &Arg<'a>) -> super::outbox_pg::Lit<'a> {
    use super::outbox_pg::Lit;
    match *a {
        Arg::Int(i) => Lit::Int(i),
        Arg::Bytes(b) => Lit::Bytes(b),
        Arg::Text(t) | Arg::OptText(Some(t)) => Lit::Text(t),
        Arg::OptText(None) => Lit::Null,
    }
}

/// Text columns: MySQL's are `VARBINARY`, read as bytes.
fn text<R>(row: &R, i: usize) -> Result<String, sqlx::Error>
where
    R: sqlx::Row,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    match row.try_get::<String, _>(i) {
        Ok(s) => Ok(s),
        Err(_) => {
            let b: Vec<u8> = row.try_get(i)?;
            String::from_utf8(b).map_err(|e| sqlx::Error::Decode(Box::new(e)))
        }
    }
}

fn claimed<R>(row: &R) -> Result<OutboxRow, sqlx::Error>
where
    R: sqlx::Row,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    Ok(OutboxRow {
        seq: row.try_get(0)?,
        id: text(row, 1)?,
        topic: text(row, 2)?,
        business_id: text(row, 3)?,
        payload: row.try_get(4)?,
        attempts: row.try_get(5)?,
    })
}

/// Runs `$body` with `$p` bound to the store's sqlx pool; SQLite holds the
/// process's writer turn.
macro_rules! on_pool {
    ($store:expr, |$p:ident| $body:expr) => {
        match &$store.pool {
            #[cfg(feature = "postgres")]
            Pool::Postgres($p) => $body,
            #[cfg(feature = "mysql")]
            Pool::MySql($p) => $body,
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(lite) => {
                let _turn = lite.writer.lock().await;
                let $p = &lite.pool;
                $body
            }
        }
    };
}

impl SqlStore {
    fn outbox_table(&self) -> String {
        self.names.outbox_q(self.dialect)
    }

    /// Claims up to `limit` due messages for `owner` for `lease_us`, oldest
    /// first (PostgreSQL and MySQL skip rows other relays are claiming; SQLite
    /// claims in `BEGIN IMMEDIATE`). `again`: this claim is repeated after its
    /// reply was lost, so it first gives back, in the same transaction, what
    /// the lost attempt took under `owner`.
    pub(crate) async fn outbox_claim(
        &self,
        owner: &[u8; 16],
        lease_us: i64,
        limit: i64,
        again: bool,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let t = self.outbox_table();
        let release = again.then(|| q::release_claim(self.dialect, &t));
        let release = release.as_deref();
        let mut rows = match self.dialect {
            Dialect::MySql => self.claim_mysql(&t, owner, lease_us, limit, release).await,
            #[cfg(feature = "postgres")]
            Dialect::Postgres => self.claim_pg(&t, owner, lease_us, limit, again).await,
            _ => {
                let sql = q::claim(self.dialect, &t);
                let args = [Arg::Int(lease_us), Arg::Bytes(owner), Arg::Int(limit)];
                retry_conflicts(|| async {
                    self.sent.one();
                    on_pool!(self, |p| {
                        let mut tx = if self.dialect == Dialect::Sqlite {
                            p.begin_with("BEGIN IMMEDIATE").await?
                        } else {
                            p.begin().await?
                        };
                        if let Some(r) = release {
                            bind_args(sqlx::query(sqlx::AssertSqlSafe(r)), &[Arg::Bytes(owner)])
                                .execute(&mut *tx)
                                .await?;
                        }
                        let got = bind_args(sqlx::query(sqlx::AssertSqlSafe(sql.as_str())), &args)
                            .fetch_all(&mut *tx)
                            .await?;
                        let out = got.iter().map(claimed).collect::<Result<Vec<_>, _>>()?;
                        tx.commit().await?;
                        Ok(out)
                    })
                })
                .await
            }
        }
        .map_err(map_err)?;
        rows.sort_by_key(|r| r.seq);
        Ok(rows)
    }

    /// PostgreSQL's claim: one simple query, unflushed (`outbox_pg.rs`).
    #[cfg(feature = "postgres")]
    async fn claim_pg(
        &self,
        t: &str,
        owner: &[u8; 16],
        lease_us: i64,
        limit: i64,
        again: bool,
    ) -> Result<Vec<OutboxRow>, sqlx::Error> {
        use super::outbox_pg::{Lit, inline, unflushed};
        let mut parts = Vec::with_capacity(2);
        if again {
            let release = q::release_claim(Dialect::Postgres, t);
            parts.push(inline(&release, &[Lit::Bytes(owner)]));
        }
        let claim = q::claim(Dialect::Postgres, t);
        let args = [Lit::Int(lease_us), Lit::Bytes(owner), Lit::Int(limit)];
        parts.push(inline(&claim, &args));
        let sql = unflushed(&parts);
        retry_conflicts(|| async {
            self.sent.one();
            #[allow(irrefutable_let_patterns)]
            let Pool::Postgres(p) = &self.pool else {
                return Err(sqlx::Error::Configuration("not a PostgreSQL pool".into()));
            };
            let got = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.as_str()))
                .fetch_all(p)
                .await?;
            got.iter().map(claimed).collect()
        })
        .await
    }

    #[allow(unused_variables, unreachable_code, irrefutable_let_patterns)]
    async fn claim_mysql(
        &self,
        t: &str,
        owner: &[u8; 16],
        lease_us: i64,
        limit: i64,
        release: Option<&str>,
    ) -> Result<Vec<OutboxRow>, sqlx::Error> {
        #[cfg(feature = "mysql")]
        if let Pool::MySql(p) = &self.pool {
            let select = q::claim_select(t);
            return retry_conflicts(|| async {
                self.sent.one();
                let mut tx = p.begin().await?;
                if let Some(r) = release {
                    bind_args(sqlx::query(sqlx::AssertSqlSafe(r)), &[Arg::Bytes(owner)])
                        .execute(&mut *tx)
                        .await?;
                }
                let got = bind_args(
                    sqlx::query(sqlx::AssertSqlSafe(select.as_str())),
                    &[Arg::Int(limit)],
                )
                .fetch_all(&mut *tx)
                .await?;
                let out = got.iter().map(claimed).collect::<Result<Vec<_>, _>>()?;
                if !out.is_empty() {
                    let seqs: Vec<i64> = out.iter().map(|r| r.seq).collect();
                    let update = q::claim_update(t, &seqs);
                    bind_args(
                        sqlx::query(sqlx::AssertSqlSafe(update)),
                        &[Arg::Int(lease_us), Arg::Bytes(owner)],
                    )
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(out)
            })
            .await;
        }
        Err(sqlx::Error::Configuration("not a MySQL pool".into()))
    }

    /// One statement with `args`; the rows it changed.
    async fn outbox_exec(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        self.outbox_exec_among(sql, args, None).await
    }

    /// [`outbox_exec`](Self::outbox_exec) of a statement over a set of rows:
    /// on PostgreSQL `seqs` is the last placeholder (`= ANY($n)`), and the
    /// statement runs unflushed (`outbox_pg.rs`); elsewhere the text holds
    /// them.
    async fn outbox_exec_among(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        seqs: Option<&[i64]>,
    ) -> Result<u64, StoreError> {
        // Elsewhere the text holds them.
        #[cfg(not(feature = "postgres"))]
        let _ = seqs;
        retry_conflicts(|| async {
            self.sent.one();
            match &self.pool {
                #[cfg(feature = "postgres")]
                Pool::Postgres(p) => match seqs {
                    // A batch's mark or give-back: one unflushed simple query.
                    Some(seqs) => {
                        use super::outbox_pg::{Lit, inline, unflushed};
                        let mut lits: Vec<Lit<'_>> = args.iter().map(lit).collect();
                        lits.push(Lit::Ints(seqs));
                        let text = unflushed(&[inline(sql, &lits)]);
                        Ok(sqlx::raw_sql(sqlx::AssertSqlSafe(text))
                            .execute(p)
                            .await?
                            .rows_affected())
                    }
                    None => Ok(bind_args(sqlx::query(sqlx::AssertSqlSafe(sql)), args)
                        .execute(p)
                        .await?
                        .rows_affected()),
                },
                #[cfg(feature = "mysql")]
                Pool::MySql(p) => Ok(bind_args(sqlx::query(sqlx::AssertSqlSafe(sql)), args)
                    .execute(p)
                    .await?
                    .rows_affected()),
                #[cfg(feature = "sqlite")]
                Pool::Sqlite(lite) => {
                    let _turn = lite.writer.lock().await;
                    Ok(bind_args(sqlx::query(sqlx::AssertSqlSafe(sql)), args)
                        .execute(&lite.pool)
                        .await?
                        .rows_affected())
                }
            }
        })
        .await
        .map_err(map_err)
    }

    /// Marks `seqs` sent, kept for `retention_us` before `purge_expired` may
    /// delete them: one statement for the batch.
    pub(crate) async fn outbox_sent(
        &self,
        seqs: &[i64],
        retention_us: i64,
    ) -> Result<u64, StoreError> {
        if seqs.is_empty() {
            return Ok(0);
        }
        let sql = q::mark_sent(self.dialect, &self.outbox_table(), seqs);
        self.outbox_exec_among(&sql, &[Arg::Int(retention_us)], Some(seqs))
            .await
    }

    /// Gives back messages `owner` got no answer about, due after `delay_us`.
    pub(crate) async fn outbox_release(
        &self,
        seqs: &[i64],
        owner: &[u8; 16],
        delay_us: i64,
    ) -> Result<u64, StoreError> {
        if seqs.is_empty() {
            return Ok(0);
        }
        let sql = q::release(self.dialect, &self.outbox_table(), seqs);
        let args = [Arg::Int(delay_us), Arg::Bytes(owner)];
        self.outbox_exec_among(&sql, &args, Some(seqs)).await
    }

    /// Reschedules a message `owner` failed to publish; whether it still held it.
    pub(crate) async fn outbox_retry(
        &self,
        seq: i64,
        owner: &[u8; 16],
        attempts: i64,
        delay_us: i64,
        error: &str,
    ) -> Result<bool, StoreError> {
        let sql = q::retry(self.dialect, &self.outbox_table());
        let args = [
            Arg::Int(attempts),
            Arg::Int(delay_us),
            Arg::Text(error),
            Arg::Int(seq),
            Arg::Bytes(owner),
        ];
        Ok(self.outbox_exec(&sql, &args).await? > 0)
    }

    /// Parks a message `owner` held; whether this call parked it.
    pub(crate) async fn outbox_park(
        &self,
        seq: i64,
        owner: &[u8; 16],
        attempts: i64,
        error: &str,
    ) -> Result<bool, StoreError> {
        let sql = q::park(self.dialect, &self.outbox_table());
        let args = [
            Arg::Int(attempts),
            Arg::Text(error),
            Arg::Int(seq),
            Arg::Bytes(owner),
        ];
        Ok(self.outbox_exec(&sql, &args).await? > 0)
    }

    /// A listener on the channel `enqueue` notifies on commit (PostgreSQL;
    /// `None` elsewhere). It holds one connection of the pool.
    #[cfg(feature = "postgres")]
    pub(crate) async fn outbox_listener(
        &self,
    ) -> Result<Option<sqlx::postgres::PgListener>, StoreError> {
        #[allow(irrefutable_let_patterns)]
        let Pool::Postgres(p) = &self.pool else {
            return Ok(None);
        };
        let mut l = sqlx::postgres::PgListener::connect_with(p)
            .await
            .map_err(map_err)?;
        l.listen(&q::channel(self.names.outbox_name()))
            .await
            .map_err(map_err)?;
        Ok(Some(l))
    }

    /// Pending messages, the oldest one's age, parked messages.
    pub(crate) async fn outbox_counts(&self) -> Result<OutboxCounts, StoreError> {
        let sql = q::stats(self.dialect, &self.outbox_table());
        self.sent.one();
        let r: Result<OutboxCounts, sqlx::Error> = async {
            match &self.pool {
                #[cfg(feature = "postgres")]
                Pool::Postgres(p) => {
                    counts(&sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_one(p).await?)
                }
                #[cfg(feature = "mysql")]
                Pool::MySql(p) => {
                    counts(&sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_one(p).await?)
                }
                #[cfg(feature = "sqlite")]
                Pool::Sqlite(l) => counts(
                    &sqlx::query(sqlx::AssertSqlSafe(sql))
                        .fetch_one(&l.pool)
                        .await?,
                ),
            }
        }
        .await;
        r.map_err(map_err)
    }
}

fn counts<R>(row: &R) -> Result<OutboxCounts, sqlx::Error>
where
    R: sqlx::Row,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    Ok(OutboxCounts {
        pending: row.try_get::<Option<i64>, _>(0)?.unwrap_or(0),
        oldest_us: row.try_get::<Option<i64>, _>(1)?.unwrap_or(0),
        parked: row.try_get::<Option<i64>, _>(2)?.unwrap_or(0),
    })
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::outbox::Outbox;

    /// A claim whose reply was lost, repeated: the repeat gets the rows the
    /// lost attempt took at once, instead of leaving them for a lease.
    #[tokio::test]
    async fn a_repeated_claim_takes_back_what_its_lost_attempt_claimed() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let store = SqlStore::sqlite(pool.clone());
        store.migrate().await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        for i in 0..3 {
            Outbox::enqueue(&mut tx, "orders", &format!("o-{i}"), b"x")
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        let (owner, lease) = ([7; 16], 60_000_000);
        let lost = store.outbox_claim(&owner, lease, 10, false).await.unwrap();
        assert_eq!(
            lost.len(),
            3,
            "the first attempt took them; its reply is lost"
        );
        let other = store
            .outbox_claim(&[8; 16], lease, 10, false)
            .await
            .unwrap();
        assert!(other.is_empty(), "another claim finds them leased");
        let again = store.outbox_claim(&owner, lease, 10, true).await.unwrap();
        let seqs = |v: &[OutboxRow]| v.iter().map(|r| r.seq).collect::<Vec<_>>();
        assert_eq!(seqs(&again), seqs(&lost), "the repeat holds them now");
        let gone = store
            .outbox_claim(&[9; 16], lease, 10, false)
            .await
            .unwrap();
        assert!(gone.is_empty(), "and under a lease again");
    }
}
