//! One-time tokens: `idem.tokens().issue(scope, ttl)` hands out an unguessable
//! token (the form's hidden field); `idem.tokens().consume(scope, &token).run(body)`
//! runs the body once per token.
//!
//! ```text
//! issue ──> issued ──take──> consuming(owner, lease) ──body Ok──> deleted
//!              ^                     │
//!              ├──── body Err ───────┤   (given back: a retry can use it)
//!              └──── lease lapsed ───┘   (a crashed holder: taken over)
//! ```
//!
//! Concurrent submissions of one token: one takes it, the others wait for it
//! (a local wake-up when the holder is in this process) and then find it
//! consumed (`Error::TokenInvalid`) or given back (they take it), so no
//! submitter loses a token that is still valid. The store keeps only a digest
//! of each token (blake3), so keys, spans and metrics never show one.
//!
//! - [`value`]: [`Token`], generation and format check;
//! - `consume`: the protocol over the execution layer (take, hold under the
//!   watchdog renewing through the token store, consume or give back).

use std::future::Future;
use std::time::Duration;

use crate::error::Error;
use crate::fence::Fence;
use crate::handle::Idem;
use crate::key::Key;
use crate::observe::Op;

mod consume;
pub mod value;

pub use value::Token;

/// Default lease of a token being consumed.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The one-time tokens of a handle: `idem.tokens()`.
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'h> {
    idem: &'h Idem,
}

impl Idem {
    /// The one-time token API. Needs a store that keeps tokens (memory, Redis,
    /// Redis Cluster, and the SQL stores after `migrate()`); others fail with
    /// `Error::Config`.
    pub fn tokens(&self) -> Tokens<'_> {
        Tokens { idem: self }
    }
}

impl<'h> Tokens<'h> {
    /// Issues a new token for `scope` (e.g. `"token:order-form"`), valid for
    /// `ttl`: 256 bits of which 244 random (two UUID v4s), 43 URL-safe characters.
    pub async fn issue(&self, scope: &str, ttl: Duration) -> Result<Token, Error> {
        if ttl.is_zero() {
            return Err(Error::Config(
                "a token's ttl must be greater than zero".into(),
            ));
        }
        crate::policy::within_bounds("ttl", ttl).map_err(Error::Config)?;
        let token = Token::generate();
        let key = self.key(scope, &token);
        self.idem
            .scenes()
            .register_key(&key, self.idem.key_namespace())?;
        let tokens = self.store(&key)?;
        let exec = &self.idem.inner.exec;
        let k = key.as_str();
        exec.op(Op::TokenIssue, k, || tokens.issue(k, ttl))
            .await
            .map_err(|e| self.idem.store_error(k, e))?;
        Ok(token)
    }

    /// Starts consuming `token` for `scope`; `.run(body)` runs the body if the
    /// token is valid, and deletes the token when the body succeeds.
    pub fn consume(&self, scope: &str, token: &str) -> Consume<'h> {
        let key = Token::check(token).map(|t| self.key(scope, &t));
        Consume {
            idem: self.idem,
            scope: scope.to_owned(),
            key,
            lease: DEFAULT_LEASE,
            wait: None,
            max_hold: None,
        }
    }

    /// The key of a token: the scope and the token's digest.
    fn key(&self, scope: &str, token: &Token) -> Key {
        self.idem.key(scope, &[&token.digest()])
    }

    fn store(&self, key: &Key) -> Result<&'h dyn crate::store::token::TokenStore, Error> {
        self.idem.inner.exec.store.tokens().ok_or_else(|| {
            Error::Config(format!(
                "one-time tokens (`{}`): the `{}` store keeps no tokens; use a store that does (memory, Redis, Redis Cluster, PostgreSQL, MySQL/MariaDB, SQLite)",
                key.scope(),
                self.idem.store_name()
            ))
        })
    }
}

/// A token consumption being configured: `idem.tokens().consume(scope, token)`.
#[must_use = "nothing is consumed until `.run(...)` is awaited"]
#[derive(Debug)]
pub struct Consume<'h> {
    idem: &'h Idem,
    scope: String,
    /// `None`: the text is not a token of idem's format (never issued).
    key: Option<Key>,
    lease: Duration,
    wait: Option<Duration>,
    max_hold: Option<Duration>,
}

impl Consume<'_> {
    /// How long the token stays taken without renewal (default 30 s): a holder
    /// that crashed gives it back after this.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
    /// How long a concurrent submission waits for the holder (default 5 s, or
    /// the lease if shorter: the rule of every technique).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }
    /// Upper bound on renewal for a hung body (default 20 × lease).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.max_hold = Some(d);
        self
    }

    /// Runs `body` with the take's fence if the token is valid; `Ok` deletes the
    /// token, `Err` gives it back. An unknown, consumed, expired or forged token is
    /// `Error::TokenInvalid`; a submission still waiting for a concurrent holder
    /// after `wait` is `Error::InProgress`.
    pub async fn run<T, E, B, Fut>(self, body: B) -> Result<T, E>
    where
        T: Send,
        E: From<Error> + Send,
        B: FnOnce(Fence) -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
    {
        consume::Consumption {
            idem: self.idem,
            scope: &self.scope,
            key: self.key.as_ref(),
            lease: self.lease,
            wait: self.wait,
            max_hold: self.max_hold,
        }
        .execute(body)
        .await
    }
}
