//! What a `redis+sentinel://` URL names: the master, the sentinels, the
//! credentials and the database, checked before anything connects.

use crate::store::StoreError;

/// The URL scheme of a store behind Sentinel.
pub(super) const SCHEME: &str = "redis+sentinel://";

/// What a `redis+sentinel://` URL (or [`RedisStore::sentinel`](super::RedisStore::sentinel)) names.
#[derive(Debug, Clone)]
pub(super) struct SentinelSpec {
    pub(super) master: String,
    pub(super) sentinels: Vec<String>,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
    pub(super) db: i64,
}

impl SentinelSpec {
    /// Parses `redis+sentinel://[[user]:password@]host:port[,host:port…]/<master name>[/<db>]`.
    /// The credentials and the database are the data nodes'; the sentinels are
    /// asked without credentials.
    pub(super) fn parse(url: &str) -> Result<Self, StoreError> {
        let rest = url
            .strip_prefix(SCHEME)
            .ok_or_else(|| StoreError::config(format!("a Sentinel URL starts with `{SCHEME}`")))?;
        let (auth, rest) = match rest.rfind('@') {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let mut path = path.split('/');
        let master = path.next().unwrap_or("");
        let db = match path.next() {
            None | Some("") => 0,
            Some(n) => n.parse().map_err(|_| {
                StoreError::config(format!(
                    "Sentinel URL: `{n}` after the master name is not a database number"
                ))
            })?,
        };
        let sentinels = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{h}"))
            .collect::<Vec<_>>();
        let (username, password) = match auth.map(|a| a.split_once(':').unwrap_or(("", a))) {
            Some((u, p)) => (
                (!u.is_empty()).then(|| u.to_owned()),
                (!p.is_empty()).then(|| p.to_owned()),
            ),
            None => (None, None),
        };
        let spec = SentinelSpec {
            master: master.to_owned(),
            sentinels,
            username,
            password,
            db,
        };
        spec.check()?;
        Ok(spec)
    }

    /// A master name and at least one sentinel.
    pub(super) fn check(&self) -> Result<(), StoreError> {
        if self.master.is_empty() {
            return Err(StoreError::config(format!(
                "no Sentinel master name: write it after the sentinel addresses, as in \
                 `{SCHEME}host:26379,host2:26379/mymaster` (the name in the sentinels' \
                 `sentinel monitor <name> …` line)"
            )));
        }
        if self.sentinels.is_empty() {
            return Err(StoreError::config(format!(
                "no sentinel addresses: list them as in `{SCHEME}host:26379,host2:26379/{}`",
                self.master
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_master_sentinels_and_credentials() {
        let s = SentinelSpec::parse("redis+sentinel://:pw@a:26379,b:26380/mymaster/2").unwrap();
        assert_eq!(s.master, "mymaster");
        assert_eq!(s.sentinels, ["redis://a:26379", "redis://b:26380"]);
        assert_eq!(
            (s.username, s.password.as_deref(), s.db),
            (None, Some("pw"), 2)
        );
        for bad in [
            "redis+sentinel://a:26379",
            "redis+sentinel://a:26379/",
            "redis+sentinel:///mymaster",
            "redis+sentinel://a:1/m/x",
        ] {
            let e = SentinelSpec::parse(bad).unwrap_err();
            assert!(matches!(e, StoreError::Config(_)), "{bad}: {e:?}");
        }
        let e = SentinelSpec::parse("redis+sentinel://a:26379").unwrap_err();
        assert!(e.to_string().contains("master name"), "{e}");
    }
}
