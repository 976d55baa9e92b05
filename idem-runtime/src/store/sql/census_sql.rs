//! What operators count on a SQL store: records by scene and state
//! (`Store::census`), in one `GROUP BY` statement on the database clock like
//! every other statement. The rows a purge would delete are counted by each
//! table set (`table_set.rs`).
//!
//! The scene of a key `ns:scene:parts` is the text between the namespace's
//! prefix and the next `:` (escaping keeps `:` out of a rendered scene), cut
//! by the database (`split_part`, `SUBSTRING_INDEX`, `instr`), so only one
//! row per scene and state travels, however many records there are. The
//! prefix is compared with `substr`, not `LIKE`: an escaped namespace holds
//! `%`, a `LIKE` wildcard.

use super::stmt::Stmt;
use super::{Dialect, TableNames};

/// The census of one store.
#[derive(Debug, Clone)]
pub(crate) struct CensusStatements {
    /// Binds: the namespace prefix, its length (characters; bytes on MySQL,
    /// whose key column is binary). Rows: scene, state, expired (0/1), count.
    pub(crate) census: Stmt,
}

impl CensusStatements {
    pub(crate) fn new(d: Dialect, n: &TableNames) -> Self {
        let t = n.records(d);
        let now = super::table_set::db_now(d);
        let census = match d {
            Dialect::Postgres => format!(
                "SELECT split_part(substr(idem_key, $2::INT4 + 1), ':', 1) AS scene, \
                   state::INT8 AS state, (CASE WHEN expires_at <= {now} THEN 1 ELSE 0 END)::INT8 AS expired, \
                   COUNT(*)::INT8 AS n \
                 FROM {t} WHERE left(idem_key, $2::INT4) = $1 GROUP BY 1, 2, 3"
            ),
            Dialect::MySql => format!(
                "SELECT CAST(SUBSTRING_INDEX(SUBSTRING(idem_key, ? + 1), ':', 1) AS CHAR CHARACTER SET utf8mb4) AS scene, \
                   CAST(state AS SIGNED) AS state, CAST(expires_at <= {now} AS SIGNED) AS expired, \
                   CAST(COUNT(*) AS SIGNED) AS n \
                 FROM {t} WHERE LEFT(idem_key, ?) = ? GROUP BY 1, 2, 3"
            ),
            Dialect::Sqlite => format!(
                "SELECT substr(r, 1, instr(r || ':', ':') - 1) AS scene, state, \
                   expires_at <= {now} AS expired, COUNT(*) AS n \
                 FROM (SELECT substr(idem_key, ?2 + 1) AS r, state, expires_at FROM {t} \
                       WHERE substr(idem_key, 1, ?2) = ?1) GROUP BY 1, 2, 3"
            ),
        };
        CensusStatements {
            census: Stmt::from(census),
        }
    }
}
