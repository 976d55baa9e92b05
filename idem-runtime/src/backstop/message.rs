//! Unique-violation messages of the databases whose errors do not carry the
//! constraint name in a field: MySQL/MariaDB (error 1062) and SQLite.

use super::UniqueViolation;

/// Parses the MySQL/MariaDB and SQLite unique-violation messages.
///
/// ```
/// use idem::backstop::parse_message;
/// let v = parse_message("Duplicate entry 'x' for key 'orders.uk_order_no'");
/// assert_eq!(v.constraint.as_deref(), Some("uk_order_no"));
/// let v = parse_message("UNIQUE constraint failed: orders.user_id, orders.req_id");
/// assert_eq!(v.table.as_deref(), Some("orders"));
/// assert_eq!(v.columns, ["user_id", "req_id"]);
/// ```
pub fn parse_message(msg: &str) -> UniqueViolation {
    const MY: &str = " for key '";
    if let Some(pos) = msg.rfind(MY) {
        let rest = &msg[pos + MY.len()..];
        let name = rest.strip_suffix('\'').unwrap_or(rest);
        let name = name.rsplit('.').next().unwrap_or(name);
        return UniqueViolation {
            constraint: Some(name.to_owned()),
            table: None,
            columns: Vec::new(),
        };
    }
    const LITE: &str = "UNIQUE constraint failed: ";
    if let Some(pos) = msg.find(LITE) {
        // An index on expressions is named instead: `… failed: index 'uk_name'`.
        if let Some(name) = msg[pos + LITE.len()..]
            .strip_prefix("index '")
            .and_then(|r| r.strip_suffix('\''))
        {
            return UniqueViolation {
                constraint: Some(name.to_owned()),
                table: None,
                columns: Vec::new(),
            };
        }
        let mut table = None;
        let mut columns = Vec::new();
        for col in msg[pos + LITE.len()..].split(',') {
            let col = col.trim();
            match col.split_once('.') {
                Some((t, c)) => {
                    table.get_or_insert_with(|| t.to_owned());
                    columns.push(c.to_owned());
                }
                None => columns.push(col.to_owned()),
            }
        }
        return UniqueViolation {
            constraint: None,
            table,
            columns,
        };
    }
    UniqueViolation {
        constraint: None,
        table: None,
        columns: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_name_after_last_marker() {
        let v = parse_message("Duplicate entry 'a for key 'b' for key 'uk_order_no'");
        assert_eq!(v.constraint.as_deref(), Some("uk_order_no"));
    }

    #[test]
    fn sqlite_expression_index_is_named() {
        let v = parse_message("UNIQUE constraint failed: index 'uk_lower_email'");
        assert_eq!(v.constraint.as_deref(), Some("uk_lower_email"));
        assert!(v.columns.is_empty());
    }

    #[test]
    fn sqlite_columns() {
        let v = parse_message("UNIQUE constraint failed: t_order.order_no");
        assert_eq!(v.constraint, None);
        assert_eq!(v.table.as_deref(), Some("t_order"));
        assert_eq!(v.columns, ["order_no"]);
    }
}
