//! The relay's claim (feature `rabbitmq` or `nats`): due messages taken for
//! one lease under the claim's owner, oldest first, skipping rows another
//! relay is claiming; PostgreSQL in one unflushed round trip
//! (`outbox_pg.rs`), MySQL/MariaDB in a select and an update, SQLite in
//! `BEGIN IMMEDIATE`.

use super::text as q;
use crate::sql_kernel::arg::bind_args;
use crate::sql_kernel::{Arg, Dialect, retry_conflicts};
use crate::store::StoreError;
use crate::store::sql::SqlStore;
use crate::store::sql::errors::map_err;
#[cfg(any(feature = "postgres", feature = "mysql"))]
use crate::store::sql::pool::Pool;
use crate::store::sql::pool::on_pool;

/// One claimed message.
#[derive(Debug, Clone)]
pub(crate) struct OutboxRow {
    pub(crate) seq: i64,
    pub(crate) id: String,
    pub(crate) topic: String,
    pub(crate) business_id: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) attempts: i64,
    /// The creation's W3C `traceparent` and `tracestate`, as stored: the
    /// outbox reads them into a trace context.
    pub(crate) traceparent: Option<String>,
    pub(crate) tracestate: Option<String>,
}

/// An optional text column (`NULL`, or bytes on MySQL).
fn opt_text<R>(row: &R, i: usize) -> Result<Option<String>, sqlx::Error>
where
    R: sqlx::Row,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<Vec<u8>>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    match row.try_get::<Option<String>, _>(i) {
        Ok(s) => Ok(s),
        Err(_) => {
            let b: Option<Vec<u8>> = row.try_get(i)?;
            Ok(b.and_then(|b| String::from_utf8(b).ok()))
        }
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
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<Vec<u8>>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    Ok(OutboxRow {
        traceparent: opt_text(row, 6)?,
        tracestate: opt_text(row, 7)?,
        seq: row.try_get(0)?,
        id: text(row, 1)?,
        topic: text(row, 2)?,
        business_id: text(row, 3)?,
        payload: row.try_get(4)?,
        attempts: row.try_get(5)?,
    })
}

impl SqlStore {
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
        use super::pg::{Lit, inline, unflushed};
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
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

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
        for i in 0..3 {
            sqlx::query(
                "INSERT INTO idem_outbox (namespace, id, topic, business_id, payload, state, \
                 attempts, due_at, created_at) VALUES ('', ?, 'orders', ?, x'78', 0, 0, 0, 0)",
            )
            .bind(format!("obx-{i}"))
            .bind(format!("o-{i}"))
            .execute(&pool)
            .await
            .unwrap();
        }
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
