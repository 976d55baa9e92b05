//! The driver calls every dialect module needs, generated per dialect because
//! they differ only in the pool and row types (sqlx's executor traits would
//! need a bound per call site; a macro keeps each dialect module short).

/// The driver calls of one dialect module, which differ only in the pool and
/// row types: `execute`, `exists`, `fetch`, `census`, `keys`, `count` and `raw` (a row as [`RawRow`]).
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

        /// [`fetch`] on a connection of the caller's (inside its transaction).
        #[allow(dead_code)]
        pub(crate) async fn fetch_on(
            conn: &mut <<$Row as sqlx::Row>::Database as sqlx::Database>::Connection,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<Option<RawRow>, sqlx::Error> {
            let row = bind(sent, stmt, args).fetch_optional(&mut *conn).await?;
            row.as_ref()
                .map(raw)
                .transpose()
                .map_err(|e| sqlx::Error::Decode(Box::new(e)))
        }

        /// The census rows: scene, state, expired, count (`census_sql.rs`).
        pub(super) async fn census(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<Vec<(String, i64, i64, i64)>, StoreError> {
            let rows = bind(sent, stmt, args)
                .fetch_all($pool)
                .await
                .map_err(map_err)?;
            let get = |r: &$Row, i: usize| r.try_get::<i64, _>(i).map_err(map_err);
            rows.iter()
                .map(|r| {
                    let scene = r.try_get::<String, _>(0).map_err(map_err)?;
                    Ok((scene, get(r, 1)?, get(r, 2)?, get(r, 3)?))
                })
                .collect()
        }

        /// The keys and states of an operator's listing (`operator_sql.rs`).
        pub(super) async fn keys(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<Vec<(String, i64)>, StoreError> {
            let rows = bind(sent, stmt, args)
                .fetch_all($pool)
                .await
                .map_err(map_err)?;
            rows.iter()
                .map(|r| {
                    let key = r.try_get::<String, _>(0).map_err(map_err)?;
                    Ok((key, r.try_get::<i64, _>(1).map_err(map_err)?))
                })
                .collect()
        }

        /// The one number of a `SELECT COUNT(*)`.
        pub(super) async fn count(
            $p: &$Pool,
            sent: &Sent,
            stmt: &Stmt,
            args: &[Arg<'_>],
        ) -> Result<i64, StoreError> {
            let row = bind(sent, stmt, args)
                .fetch_one($pool)
                .await
                .map_err(map_err)?;
            row.try_get::<i64, _>(0).map_err(map_err)
        }

        pub(super) fn raw(row: &$Row) -> Result<RawRow, StoreError> {
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

/// Runs `$body` with `$p` bound to the dialect's pool and `$m` to its module.
macro_rules! dispatch {
    ($pool:expr, |$p:ident, $m:ident| $body:expr) => {
        match $pool {
            #[cfg(feature = "postgres")]
            $crate::store::sql::pool::Pool::Postgres($p) => {
                use super::postgres as $m;
                $body
            }
            #[cfg(feature = "mysql")]
            $crate::store::sql::pool::Pool::MySql($p) => {
                use super::mysql as $m;
                $body
            }
            #[cfg(feature = "sqlite")]
            $crate::store::sql::pool::Pool::Sqlite($p) => {
                use super::sqlite as $m;
                $body
            }
        }
    };
}
