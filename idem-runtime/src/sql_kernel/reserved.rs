//! The reserved words of PostgreSQL, MySQL 8 / MariaDB and SQLite, as one
//! sorted list: a bare identifier must not be any of them, since idem's table
//! names are spliced into statements of every dialect.
//!
//! Built by trying `CREATE TABLE <word> …` plus an `INSERT`, `SELECT` and
//! `DELETE` on it, for every keyword PostgreSQL 15 (`pg_get_keywords()`) and
//! MariaDB 10.11 (`information_schema.KEYWORDS`) know and every SQLite 3.40
//! keyword, against those three servers: a word any of them rejects is here. MySQL 8's
//! reserved words (window functions such as `rank`, `lateral`, `system`, ...)
//! are added from its manual, as no MySQL 8 server was at hand. A word that is
//! harmless somewhere is still refused: one name must work on every dialect.

/// Sorted (byte order), lowercase.
#[rustfmt::skip]
const RESERVED: &[&str] = &[
    "_filename", "accessible", "add", "all", "alter", "analyse", "analyze", "and", "any",
    "array", "as", "asc", "asensitive", "asymmetric", "authorization", "autoincrement",
    "before", "between", "bigint", "binary", "blob", "both", "by", "call", "cascade", "case",
    "cast", "change", "char", "character", "check", "collate", "collation", "column", "commit",
    "concurrently", "condition", "constraint", "continue", "convert", "create", "cross", "cube",
    "cume_dist", "current_catalog", "current_date", "current_role", "current_schema",
    "current_time", "current_timestamp", "current_user", "cursor", "databases", "day_hour",
    "day_microsecond", "day_minute", "day_second", "dec", "decimal", "declare", "default",
    "deferrable", "delayed", "delete", "delete_domain_id", "dense_rank", "desc", "describe",
    "deterministic", "distinct", "distinctrow", "div", "do", "do_domain_ids", "double", "drop",
    "dual", "each", "else", "elseif", "empty", "enclosed", "end", "escape", "escaped", "except",
    "exists", "exit", "explain", "false", "fetch", "first_value", "float", "float4", "float8",
    "for", "force", "foreign", "freeze", "from", "full", "fulltext", "function", "generated",
    "grant", "group", "grouping", "groups", "having", "high_priority", "hour_microsecond",
    "hour_minute", "hour_second", "if", "ignore", "ignore_domain_ids", "ilike", "in", "index",
    "infile", "initially", "inner", "inout", "insensitive", "insert", "int", "int1", "int2",
    "int3", "int4", "int8", "integer", "intersect", "interval", "into", "io_after_gtids",
    "io_before_gtids", "is", "isnull", "iterate", "join", "json_table", "key", "keys", "kill",
    "lag", "last_value", "lateral", "lead", "leading", "leave", "left", "like", "limit",
    "linear", "lines", "load", "localtime", "localtimestamp", "lock", "long", "longblob",
    "longtext", "loop", "low_priority", "manual", "master_bind", "master_demote_to_replica",
    "master_demote_to_slave", "master_ssl_verify_server_cert", "match", "maxvalue",
    "mediumblob", "mediumint", "mediumtext", "middleint", "minute_microsecond", "minute_second",
    "mod", "modifies", "natural", "no_write_to_binlog", "not", "nothing", "notnull",
    "nth_value", "ntile", "null", "numeric", "of", "offset", "on", "only", "optimize",
    "optimizer_costs", "optionally", "or", "order", "out", "outer", "outfile", "over",
    "overlaps", "page_checksum", "parallel", "parse_vcol_expr", "partition", "percent_rank",
    "placing", "portion", "precision", "primary", "procedure", "purge", "qualify", "range",
    "rank", "read", "read_write", "reads", "real", "recursive", "ref_system_id", "references",
    "regexp", "release", "rename", "repeat", "replace", "require", "resignal", "restrict",
    "return", "returning", "revoke", "right", "rlike", "row", "row_number", "rows", "schemas",
    "second_microsecond", "select", "sensitive", "separator", "session_user", "set", "show",
    "signal", "similar", "smallint", "some", "spatial", "specific", "sql", "sql_big_result",
    "sql_calc_found_rows", "sql_small_result", "sqlexception", "sqlstate", "sqlwarning", "ssl",
    "starting", "stats_auto_recalc", "stats_persistent", "stats_sample_pages", "stored",
    "straight_join", "symmetric", "system", "table", "tablesample", "terminated", "then",
    "tinyblob", "tinyint", "tinytext", "to", "trailing", "transaction", "trigger", "true",
    "undo", "union", "unique", "unlock", "unsigned", "update", "usage", "use", "user", "using",
    "utc_date", "utc_time", "utc_timestamp", "value", "values", "varbinary", "varchar",
    "varcharacter", "variadic", "varying", "verbose", "virtual", "when", "where", "while",
    "window", "with", "write", "xor", "year_month", "zerofill",
];

/// Whether `word` (any case) is reserved by one of the dialects.
pub(crate) fn is_reserved(word: &str) -> bool {
    if word.len() > MAX_LEN {
        return false;
    }
    let lower = word.to_ascii_lowercase();
    RESERVED.binary_search(&lower.as_str()).is_ok()
}

/// The longest reserved word: longer names skip the lowercase copy.
const MAX_LEN: usize = 29;

#[cfg(test)]
mod tests {
    #[test]
    fn list_is_sorted_lowercase_and_bounded() {
        assert!(
            super::RESERVED.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(super::RESERVED.iter().all(|w| *w == w.to_ascii_lowercase()));
        assert_eq!(
            super::RESERVED.iter().map(|w| w.len()).max(),
            Some(super::MAX_LEN)
        );
    }
}
