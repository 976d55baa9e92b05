//! The row a lock's body writes with the fenced SQL write, modelled: it
//! executes the statement `FencedUpdate` renders, from its text.

use std::sync::Mutex;

/// The modelled row of each key: the fence of the last accepted write.
#[derive(Default)]
pub(crate) struct Rows(Mutex<Vec<u64>>);

impl Rows {
    /// Executes a fenced `UPDATE` the way a database would, from its text.
    pub(crate) fn execute(&self, key: usize, sql: &str) -> Result<u64, String> {
        let set = sql
            .split(r#""fence" = "#)
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok());
        let cond = sql
            .rsplit(r#""fence" <= "#)
            .next()
            .and_then(|n| n.trim().parse::<u64>().ok());
        let (Some(f), Some(c)) = (set, cond) else {
            return Err(format!("not a fenced update: {sql}"));
        };
        if f != c || !sql.starts_with(r#"UPDATE "t_stock" SET qty = qty - $1, "#) {
            return Err(format!("fence {f} set, {c} compared: {sql}"));
        }
        let mut rows = self.0.lock().unwrap();
        if rows.len() <= key {
            rows.resize(key + 1, 0);
        }
        if rows[key] <= c {
            rows[key] = f;
            Ok(1)
        } else {
            Ok(0)
        }
    }
}
