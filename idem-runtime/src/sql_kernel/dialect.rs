//! [`Dialect`]: the SQL databases idem speaks, and how to tell which one a URL
//! or a sqlx driver type is. Statements differ per dialect (placeholders,
//! upserts, time functions), so every SQL piece starts by asking this.

/// The SQL dialects idem speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// PostgreSQL 12 or later.
    Postgres,
    /// MySQL 8 or MariaDB 10.5 or later.
    MySql,
    /// SQLite 3.42 or later (the bundled one).
    Sqlite,
}

impl Dialect {
    /// The dialect of a database URL, by its scheme: `postgres:`/`postgresql:`,
    /// `mysql:`/`mariadb:`, `sqlite:`. `None` for anything else. Whether the
    /// matching driver feature is enabled is the caller's question.
    ///
    /// ```
    /// use idem::db::Dialect;
    /// assert_eq!(Dialect::from_url("postgresql://db/app"), Some(Dialect::Postgres));
    /// assert_eq!(Dialect::from_url("mariadb://db/app"), Some(Dialect::MySql));
    /// assert_eq!(Dialect::from_url("sqlite:idem.db"), Some(Dialect::Sqlite));
    /// assert_eq!(Dialect::from_url("redis://db"), None);
    /// ```
    pub fn from_url(url: &str) -> Option<Dialect> {
        let scheme = url.split(':').next().unwrap_or("");
        match scheme {
            "postgres" | "postgresql" => Some(Dialect::Postgres),
            "mysql" | "mariadb" => Some(Dialect::MySql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// A short lowercase name (`postgres`, `mysql`, `sqlite`): the SQL stores'
    /// name in metrics and errors.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
            Dialect::Sqlite => "sqlite",
        }
    }

    /// The dialect of a sqlx driver type, for code generic over the database:
    /// `Dialect::of::<sqlx::Postgres>()`.
    pub fn of<DB: SqlDialect>() -> Dialect {
        DB::DIALECT
    }
}

/// A sqlx database driver idem knows the dialect of.
pub trait SqlDialect: sqlx::Database {
    /// Its dialect.
    const DIALECT: Dialect;
}

#[cfg(feature = "postgres")]
impl SqlDialect for sqlx::Postgres {
    const DIALECT: Dialect = Dialect::Postgres;
}

#[cfg(feature = "mysql")]
impl SqlDialect for sqlx::MySql {
    const DIALECT: Dialect = Dialect::MySql;
}

#[cfg(feature = "sqlite")]
impl SqlDialect for sqlx::Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;
}
