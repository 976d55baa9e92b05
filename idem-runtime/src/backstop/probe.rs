//! Sample violations for `verify()`: can this handle's detection see a unique
//! violation of a declared backstop, as each engine reports it?
//!
//! Detection that cannot see the backstop fails open: the duplicate insert's
//! raw error reaches the caller and no backstop hit is counted. A start-up check
//! is the only place that can say so before the first lost record does. The
//! samples are the *text* forms every driver version shares, wrapped the way
//! sqlx wraps a database error, so they exercise the chain walk too.

use std::error::Error as StdError;
use std::fmt;

use super::{ConstraintDef, Engine};

/// What a driver's database error prints, wrapped like `sqlx::Error::Database`.
#[derive(Debug)]
pub(super) struct Sample {
    outer: String,
    inner: SampleLink,
}

#[derive(Debug)]
struct SampleLink(String);

impl fmt::Display for SampleLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl StdError for SampleLink {}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.outer)
    }
}
impl StdError for Sample {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.inner)
    }
}

/// The samples of a violation of `name` for `engine` (every engine when the
/// catalog does not say). SQLite needs the index's definition: its message
/// names columns only.
pub(super) fn samples(
    name: &str,
    def: Option<&ConstraintDef>,
    engine: Option<Engine>,
) -> Vec<(Engine, Sample)> {
    let engines: &[Engine] = match engine {
        Some(Engine::Postgres) => &[Engine::Postgres],
        Some(Engine::MySql) => &[Engine::MySql],
        Some(Engine::Sqlite) => &[Engine::Sqlite],
        _ => &[Engine::Postgres, Engine::MySql, Engine::Sqlite],
    };
    engines
        .iter()
        .filter_map(|e| {
            let text = match e {
                Engine::Postgres => {
                    format!("duplicate key value violates unique constraint \"{name}\"")
                }
                Engine::MySql => {
                    let table = def.map_or("t", |d| d.table.as_str());
                    format!("1062 (23000): Duplicate entry 'probe' for key '{table}.{name}'")
                }
                Engine::Sqlite => {
                    let d = def?;
                    let cols: Vec<String> = d
                        .columns
                        .iter()
                        .map(|c| format!("{}.{c}", d.table))
                        .collect();
                    format!("(code: 2067) UNIQUE constraint failed: {}", cols.join(", "))
                }
            };
            Some((
                *e,
                Sample {
                    outer: "error returned from database: (sample)".to_owned(),
                    inner: SampleLink(text),
                },
            ))
        })
        .collect()
}
