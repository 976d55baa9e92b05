//! SQL record stores (SQLite, PostgreSQL, MySQL/MariaDB) through `sqlx`.
