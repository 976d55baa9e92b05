//! Bind parameters ([`Arg`]) of the statements the SQL pieces build, and the
//! dialect's placeholders for them: the stores and the in-transaction
//! techniques write a statement once, with `?` and an `Arg` list, and run it on
//! whichever driver the connection belongs to.

use super::Dialect;

/// One bind parameter of a statement the SQL pieces build (text, bytes or an
/// integer: everything idem binds).
///
/// ```
/// use idem::db::Arg;
/// let key = Arg::from("o-1");
/// assert!(matches!(key, Arg::Text("o-1")));
/// assert!(matches!(Arg::from(7_i64), Arg::Int(7)));
/// ```
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// A text value.
    Text(&'a str),
    /// A text value or `NULL` (typed as text, which PostgreSQL needs).
    OptText(Option<&'a str>),
    /// A byte string.
    Bytes(&'a [u8]),
    /// An integer.
    Int(i64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Self {
        Arg::Text(s)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(s: &'a String) -> Self {
        Arg::Text(s)
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(s: Option<&'a str>) -> Self {
        Arg::OptText(s)
    }
}

impl From<i64> for Arg<'_> {
    fn from(i: i64) -> Self {
        Arg::Int(i)
    }
}

impl From<i32> for Arg<'_> {
    fn from(i: i32) -> Self {
        Arg::Int(i64::from(i))
    }
}

impl Arg<'_> {
    /// The value as a key part (bytes are shown as their length).
    pub(crate) fn render(&self) -> String {
        match self {
            Arg::Text(s) | Arg::OptText(Some(s)) => (*s).to_owned(),
            Arg::OptText(None) => "NULL".to_owned(),
            Arg::Bytes(b) => format!("<{} bytes>", b.len()),
            Arg::Int(i) => i.to_string(),
        }
    }
}

/// Binds `args` in order to a query of any of the three drivers.
pub(crate) fn bind_args<'q, DB: sqlx::Database>(
    mut q: sqlx::query::Query<'q, DB, DB::Arguments>,
    args: &[Arg<'_>],
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> Option<&'t str>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> &'t [u8]: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    for a in args {
        q = match *a {
            Arg::Text(s) => q.bind(s),
            Arg::OptText(s) => q.bind(s),
            Arg::Bytes(b) => q.bind(b),
            Arg::Int(i) => q.bind(i),
        };
    }
    q
}

/// `?` placeholders in `sql` as the dialect writes them: PostgreSQL's
/// `$1, $2, …`; the others take `?` as is. For statements whose text has no
/// `?` inside literals (the techniques' own, built from checked identifiers).
pub(crate) fn placeholders(dialect: Dialect, sql: &str) -> String {
    if dialect != Dialect::Postgres {
        return sql.to_owned();
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_numbers_its_placeholders() {
        let sql = "UPDATE t SET a = ? WHERE k = ? AND v = ?";
        assert_eq!(
            placeholders(Dialect::Postgres, sql),
            "UPDATE t SET a = $1 WHERE k = $2 AND v = $3"
        );
        assert_eq!(placeholders(Dialect::MySql, sql), sql);
        assert_eq!(placeholders(Dialect::Sqlite, sql), sql);
    }

    #[test]
    fn args_render_as_key_parts() {
        assert_eq!(Arg::Text("k").render(), "k");
        assert_eq!(Arg::OptText(None).render(), "NULL");
        assert_eq!(Arg::Bytes(&[1, 2]).render(), "<2 bytes>");
        assert_eq!(Arg::from(3_i32).render(), "3");
    }
}
