//! One-time tokens: `idem.tokens().issue(scope, ttl)` hands out an unguessable
//! token (the form's hidden field); `idem.tokens().consume(scope, &token).run(body)`
//! runs the body once per token.
//!
//! ```text
//! issue ──> issued ──take──> spent(owner) ──body Ok──> (stays spent until it expires)
//!              ^                  │
//!              └── body Err ──────┘   (given back: a retry can use it)
//! ```
//!
//! The take spends the token before the body runs, in one store operation, and
//! a body that succeeds sends nothing more: a consume costs what an issue and a
//! get-and-delete by hand cost. Only a body that returns an error gives the
//! token back; a holder that crashed, or whose caller was dropped while the
//! body ran, leaves it spent (at most once: its body may have done its work).
//! A second submission of a token whose body is running, or has run, is
//! `Error::TokenInvalid` at once. The store keeps only a digest of each token
//! (blake3), so keys, spans and metrics never show one.
//!
//! - [`value`]: [`Token`], generation and format check;
//! - `consume`: the protocol over the execution layer (take, body, give back
//!   on failure).

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

/// Default lease of a consume: it bounds the take's and the give-back's
/// store operations ([`Consume::lease`]).
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

    /// Starts consuming `token` for `scope`; `.run(body)` spends the token and
    /// runs the body if it was valid, and gives it back if the body fails.
    pub fn consume(&self, scope: &str, token: &str) -> Consume<'h> {
        let key = Token::check(token).map(|t| self.key(scope, &t));
        Consume {
            idem: self.idem,
            scope: scope.to_owned(),
            key,
            lease: DEFAULT_LEASE,
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
}

impl Consume<'_> {
    /// Bounds the consume's store operations (default 30 s): the take and
    /// the give-back each get at most a third of it (and the handle's
    /// `op_timeout`), and a give-back the store did not confirm in time goes
    /// on in the background for up to this long. A spent token holds no lease:
    /// nothing renews it, and nothing lapses.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
    /// No effect: no submission waits for a token, since a token whose body
    /// is running is spent (a second submission is `Error::TokenInvalid` at once).
    #[deprecated(note = "a token is spent by its take: no submission waits for it")]
    pub fn wait(self, _wait: Duration) -> Self {
        self
    }
    /// No effect: a spent token holds no lease, so nothing is renewed.
    #[deprecated(note = "a token is spent by its take: it holds no lease to renew")]
    pub fn max_hold(self, _d: Duration) -> Self {
        self
    }

    /// Spends the token and runs `body` with the take's fence if the token is
    /// valid; `Ok` leaves it spent, `Err` gives it back. An unknown, expired or
    /// forged token, and one spent by another submission (whose body runs or
    /// ran, or whose holder crashed), is `Error::TokenInvalid`.
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
        }
        .execute(body)
        .await
    }
}
