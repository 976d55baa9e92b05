//! A server that refuses connections answers at once: the SQL drivers' pools
//! retry a refused connection until their acquire timeout (10 s, then "pool
//! timed out"), so the command first opens one TCP connection itself and
//! reports a refusal as what it is, in about the time Redis takes to.

use std::time::Duration;

use crate::fail::{Fail, UNREACHABLE};

/// Host and port of `scheme://[user[:pass]@]host[:port][/…]` (the SQL
/// schemes' default ports), if the URL names a TCP host.
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "postgres" | "postgresql" => 5432,
        "mysql" | "mariadb" => 3306,
        _ => return None,
    };
    let authority = rest.split(['/', '?']).next()?;
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if hostport.is_empty() || hostport.starts_with('[') {
        return None;
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((hostport.to_owned(), default)),
    }
}

/// Fails at once when the server at `url` refuses a TCP connection; any
/// other outcome (connected, a timeout, a URL without a TCP host) is left
/// to the driver, whose message is more precise.
pub(crate) async fn refused(url: &str, budget: Duration) -> Result<(), Fail> {
    let Some((host, port)) = host_port(url) else {
        return Ok(());
    };
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(budget, connect).await {
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(Fail::new(
            UNREACHABLE,
            format!(
                "cannot open the store: `{}` refused the connection ({host}:{port}); check \
                 that the server is running and the host and port in the URL",
                idem::store::redact_url(url)
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_host_and_port() {
        let hp = |u| host_port(u).map(|(h, p)| format!("{h}:{p}"));
        assert_eq!(hp("postgres://u:p@db:6000/x").as_deref(), Some("db:6000"));
        assert_eq!(
            hp("mysql://root@127.0.0.1/test").as_deref(),
            Some("127.0.0.1:3306")
        );
        assert_eq!(hp("postgresql://h"), Some("h:5432".into()));
        assert_eq!(hp("sqlite:x.db"), None);
    }
}
