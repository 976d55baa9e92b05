//! PostgreSQL's relay claims and marks as one simple query each, committed
//! without waiting for the WAL flush.
//!
//! Neither statement needs durability: a claim or a sent mark that a database
//! crash forgets only makes its messages pending again, and they are
//! published again under the same ids, which is what at least once to the
//! broker already promises (consumers dedupe on the id). So each runs as
//! `SET LOCAL synchronous_commit TO OFF; <statement>` in the simple query
//! protocol: one round trip and one implicit transaction, instead of
//! `BEGIN`, the statement and `COMMIT`, each commit waiting for an fsync.
//! The values are written into the text: integers, and an owner this
//! process generated, as hex.

use std::fmt::Write as _;

/// A value written into a statement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lit<'a> {
    Int(i64),
    /// Text, quoted (standard-conforming strings: only `'` is doubled).
    Text(&'a str),
    Null,
    Bytes(&'a [u8]),
    Ints(&'a [i64]),
}

impl Lit<'_> {
    fn write(&self, out: &mut String) {
        // Writing into a String cannot fail.
        let _ = match self {
            Lit::Int(i) => write!(out, "{i}::INT8"),
            Lit::Text(t) => {
                out.push('\'');
                out.push_str(&t.replace('\'', "''"));
                out.push('\'');
                Ok(())
            }
            Lit::Null => {
                out.push_str("NULL");
                Ok(())
            }
            Lit::Bytes(b) => {
                out.push_str("'\\x");
                for x in *b {
                    let _ = write!(out, "{x:02x}");
                }
                out.push_str("'::BYTEA");
                Ok(())
            }
            Lit::Ints(v) => {
                out.push_str("ARRAY[");
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{x}");
                }
                out.push_str("]::INT8[]");
                Ok(())
            }
        };
    }
}

/// `sql` (PostgreSQL text with `$1`, `$2`, … placeholders, none inside
/// literals: the outbox's own statements) with each placeholder replaced by
/// its value.
pub(crate) fn inline(sql: &str, args: &[Lit<'_>]) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * args.len());
    let mut rest = sql;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let digits = rest[i + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - i - 1);
        let n: usize = rest[i + 1..i + 1 + digits].parse().unwrap_or(0);
        match n.checked_sub(1).and_then(|k| args.get(k)) {
            Some(v) => v.write(&mut out),
            None => out.push_str(&rest[i..i + 1 + digits]),
        }
        rest = &rest[i + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// `statements` as one simple query that commits without waiting for the
/// WAL flush.
pub(crate) fn unflushed(statements: &[String]) -> String {
    let mut out = String::from("SET LOCAL synchronous_commit TO OFF");
    for s in statements {
        out.push_str("; ");
        out.push_str(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_literals() {
        let s = inline(
            "UPDATE t SET a = $1, o = $2 WHERE seq = ANY($3) LIMIT $10",
            &[Lit::Int(-5), Lit::Bytes(&[0, 255]), Lit::Ints(&[3, 4])],
        );
        assert_eq!(
            s,
            "UPDATE t SET a = -5::INT8, o = '\\x00ff'::BYTEA WHERE seq = ANY(ARRAY[3,4]::INT8[]) LIMIT $10"
        );
        assert_eq!(
            inline("$1 $2", &[Lit::Text("it's"), Lit::Null]),
            "'it''s' NULL"
        );
        assert_eq!(
            unflushed(&["SELECT 1".into()]),
            "SET LOCAL synchronous_commit TO OFF; SELECT 1"
        );
    }
}
