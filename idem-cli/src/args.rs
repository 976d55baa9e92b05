//! The command line, as clap derives it.

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
The store: --store URL, else $REDIS_URL, else $DATABASE_URL (as the examples read them):
  redis://[user:pass@]host:port[/db]      (with --cluster: a comma-separated list of nodes)
  postgres://user@host/db   mysql://root@host/db   mariadb://…   sqlite:path/to/file.db
`outbox` and `consume` read the service's SQL database: --store URL, else $DATABASE_URL.
Passwords in URLs are shown as *** in every message.

Keys: KEY as rendered (`namespace:scene:parts`), or `#<hash>` as logs show it (searched
among --namespace's live records), or --scene S --part P…. Durations: `30s`, `2m`, `1h 30m`
(a bare number is seconds).

Exit codes (with --json, a failure prints one JSON object, error: {code, class, message}, on stdout):
  0  success (verify: every check passed)
  1  the answer is no: verify found a problem (or a warning, with --strict), forget refused a
     live claim, found no record or found it changed, inspect found no record, outbox retry
     found no such message or a message that is not parked
  2  usage: bad arguments, no store given, an unknown URL scheme, a malformed URL, outbox or
     consume on Redis
  3  unreachable: connecting, I/O, timeout, credentials refused (missing or wrong), no
     SQLite file at the path, a --metrics endpoint that does not answer
  4  any other error (a stored value idem cannot read, a command the store refused)";

/// Operate idem's stores: inspect and forget keys, purge, count, verify, print the DDL; watch
/// the outbox and the consume log.
#[derive(Debug, Parser)]
#[command(name = "idem", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Settings every subcommand shares.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// The store's URL (default: $REDIS_URL, else $DATABASE_URL).
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// The handle's namespace (`IdemBuilder::namespace`): keys start with it.
    #[arg(
        long,
        short = 'n',
        global = true,
        default_value = "",
        env = "IDEM_NAMESPACE"
    )]
    pub(crate) namespace: String,
    /// Redis: the store's key prefix (`RedisStoreBuilder::prefix`).
    #[arg(long, global = true, default_value = "")]
    pub(crate) prefix: String,
    /// Redis: the URL lists the nodes of a Redis Cluster, comma-separated.
    #[arg(long, global = true)]
    pub(crate) cluster: bool,
    /// SQL: the table the command reads. The records table (`TableNames::new`; fences, tokens,
    /// log and outbox keep their defaults); for `outbox` the outbox table (default idem_outbox),
    /// for `consume` the consume log (default idem_consume_log).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) table: Option<String>,
    /// PostgreSQL: the schema of idem's tables (`TableNames::schema`).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) schema: Option<String>,
    /// Give up on the store after this long (`2s`, `1m`; a bare number is seconds).
    #[arg(long, global = true, default_value = "30s", value_parser = duration)]
    pub(crate) timeout: std::time::Duration,
    /// Print JSON (one object) instead of text, for scripts.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

impl Global {
    /// The store URL: the flag, else the examples' variables.
    pub(crate) fn url(&self) -> Option<String> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        self.store
            .clone()
            .or_else(|| var("REDIS_URL"))
            .or_else(|| var("DATABASE_URL"))
    }

    /// The SQL database of `outbox` and `consume`: the flag, else
    /// `$DATABASE_URL` (never `$REDIS_URL`: Redis holds neither table).
    pub(crate) fn sql_url(&self) -> Option<String> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        self.store.clone().or_else(|| var("DATABASE_URL"))
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// The live keys under --namespace: in-progress claims (the default) with their holder
    /// and lease left, or every record with --state all. Redis scans; SQL reads an index.
    Ls {
        /// Which records: in-progress claims, or all live records.
        #[arg(long, value_enum, default_value = "in-progress")]
        state: StateArg,
        /// Only this scene's keys.
        #[arg(long)]
        scene: Option<String>,
        /// List at most this many keys, in key order.
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: usize,
    },
    /// A key's record: state, owner and its process, fence, expiry, size, the stored result.
    Inspect(KeyArgs),
    /// Deletes a key's record if it is still the one inspected (same state, owner, fence);
    /// refuses a live in-progress claim unless --force.
    Forget {
        #[command(flatten)]
        key: KeyArgs,
        /// Also remove a live in-progress claim (owner-checked: only the claim inspected).
        #[arg(long)]
        force: bool,
    },
    /// Deletes expired records, tokens, consume-log rows and sent outbox messages, with counts;
    /// with -n, only that namespace's expired records.
    Purge {
        /// Count what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Record counts by scene and state; the most repeated keys from a /metrics URL.
    Stats {
        /// A Prometheus endpoint exporting `idem_top_key_repeats` (http:// only).
        #[arg(long, value_name = "URL")]
        metrics: Option<String>,
        /// How many of the most repeated keys to show.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// The checks of `Idem::verify`: tables, sequences, eviction policy, backstops.
    Verify {
        /// A backstop constraint that must exist (repeatable).
        #[arg(long = "backstop", value_name = "NAME")]
        backstops: Vec<String>,
        /// The application's database holding the backstops (default: the store, if SQL).
        #[arg(long, value_name = "URL")]
        constraints: Option<String>,
        /// Fail (exit 1) on warnings too.
        #[arg(long)]
        strict: bool,
    },
    /// Prints the schema as it is now (`idem::sql::ddl`); `migrations/<dialect>/` holds it in steps.
    Ddl {
        #[arg(long, value_enum)]
        dialect: DialectArg,
    },
    /// Outbox messages per topic: pending, parked, sent, the oldest pending one's age and the
    /// lag (the oldest due one's age); --parked lists parked messages, `retry ID` unparks one.
    /// SQL stores only; with -n, one namespace's messages (`OutboxTable::namespace`), else all.
    Outbox {
        #[command(subcommand)]
        action: Option<OutboxAction>,
        /// List the parked messages (id, topic, business id, attempts, last error, created).
        #[arg(long)]
        parked: bool,
        /// With --parked: list at most this many, oldest first.
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: u32,
    },
    /// Consume-log rows per consumer and message type under --namespace, with the oldest and
    /// newest row's age and the rows past their retention. SQL stores only.
    Consume,
}

/// What `idem outbox` changes.
#[derive(Debug, Subcommand)]
pub(crate) enum OutboxAction {
    /// Unparks message ID: pending again, attempts 0, due now, no owner; the next relay round
    /// publishes it. Exit 1 when no message has this id or it is not parked.
    Retry {
        /// The message id, as `--parked` lists it (`obx-…`).
        id: String,
    },
}

/// A key: as rendered, or as scene and parts rendered by the library's key writer.
#[derive(Debug, Args)]
pub(crate) struct KeyArgs {
    /// The rendered key (`namespace:scene:parts`), as logged with `log_raw_keys`, or the
    /// `#<hash>` logs show (found among --namespace's live records).
    #[arg(required_unless_present = "scene", conflicts_with = "scene")]
    pub(crate) key: Option<String>,
    /// The scene of `Idem::guard(scene, parts)` (rendered under --namespace).
    #[arg(long)]
    pub(crate) scene: Option<String>,
    /// A key part, in order (repeatable); escaped as the library escapes it.
    #[arg(long = "part", short = 'p', requires = "scene")]
    pub(crate) parts: Vec<String>,
}

/// Which records `ls` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateArg {
    InProgress,
    All,
}

/// A duration as idem writes them (`30s`, `1h 30m`), or bare seconds.
fn duration(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().parse::<u64>() {
        Ok(secs) => Ok(std::time::Duration::from_secs(secs)),
        Err(_) => idem_duration::parse(text),
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DialectArg {
    Postgres,
    Mysql,
    Sqlite,
}
