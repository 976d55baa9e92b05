//! The outbox relay's statements on a [`SqlStore`]'s pool (feature `rabbitmq`
//! or `nats`): mark claimed messages sent, give them back, reschedule or park
//! a failed one, read the gauges (the claim is in `outbox_claim.rs`). Text in `outbox_sql.rs`; what the relay does with
//! them in `crate::outbox`. Each call is one store operation the relay runs
//! through the execution layer (timeout, breaker, retries), so each is safe to
//! repeat: a claim repeated after a lost reply leaves the first claim's rows to
//! lapse with their lease, the others set values rather than add to them.

use super::text as q;
use crate::sql_kernel::arg::bind_args;
use crate::sql_kernel::{Arg, retry_conflicts};
use crate::store::StoreError;
use crate::store::sql::SqlStore;
use crate::store::sql::errors::map_err;
use crate::store::sql::pool::Pool;

/// The outbox gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OutboxCounts {
    pub(crate) pending: i64,
    pub(crate) oldest_us: i64,
    pub(crate) parked: i64,
}

/// An argument as a literal of an unflushed PostgreSQL statement.
#[cfg(feature = "postgres")]
fn lit<'a>(a: &Arg<'a>) -> super::pg::Lit<'a> {
    use super::pg::Lit;
    match *a {
        Arg::Int(i) => Lit::Int(i),
        Arg::Bytes(b) => Lit::Bytes(b),
        Arg::Text(t) | Arg::OptText(Some(t)) => Lit::Text(t),
        Arg::OptText(None) => Lit::Null,
    }
}

impl SqlStore {
    pub(super) fn outbox_table(&self) -> String {
        super::table(self)
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
                        use super::pg::{Lit, inline, unflushed};
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
