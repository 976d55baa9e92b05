//! A real Redis dressed as an older one, for the version checks and the
//! fallbacks of the Redis store (issue 24 h). Only redis-server 7 is installed
//! here, so a loopback proxy in front of it changes exactly the two things an
//! older server does differently for idem, and nothing else:
//!
//! - `INFO` reports the older major version: the digit after
//!   `redis_version:` is replaced (one byte for one, so the RESP lengths stay
//!   right), e.g. `7.0.15` becomes `6.0.15`;
//! - `SET … NX … GET` is refused with `ERR syntax error`, as Redis before 7.0
//!   refuses it (6.2 has `GET` but not together with `NX`; 5 and 6.0 have no
//!   `GET` option at all). The proxy does not answer by itself: it renames the
//!   `GET` option of such a command to `GXT`, an option no Redis knows, and the
//!   real server answers it with its own `-ERR syntax error`, in order with the
//!   replies around it on the multiplexed connection.
//!
//! Every other command, scripts included, reaches the real server unchanged.
//! Test code only: it binds 127.0.0.1 and forwards to a 127.0.0.1 port.

#![allow(dead_code)]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy; it stops (and drops its connections) when dropped.
#[derive(Debug)]
pub struct OldRedis {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl OldRedis {
    /// Listens on a spare loopback port and forwards to `127.0.0.1:upstream`,
    /// reporting major version `major` (a digit, `'1'..='6'`).
    pub async fn start(upstream: u16, major: u8) -> OldRedis {
        assert!(major.is_ascii_digit(), "a one-digit major version");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(connection(client, upstream, major));
            }
        });
        OldRedis { port, task }
    }

    /// The URL a Redis client uses to reach the "old" server.
    pub fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for OldRedis {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn connection(client: TcpStream, upstream: u16, major: u8) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = async move {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = cr.read(&mut buf).await {
            pending.extend_from_slice(&buf[..n]);
            let ready = requests(&mut pending);
            if sw.write_all(&ready).await.is_err() {
                return;
            }
        }
        let _ = sw.shutdown().await;
    };
    let down = async move {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = sr.read(&mut buf).await {
            pending.extend_from_slice(&buf[..n]);
            let ready = replies(&mut pending, major);
            if cw.write_all(&ready).await.is_err() {
                return;
            }
        }
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
}

const VERSION: &[u8] = b"redis_version:";

/// Takes what can be sent of the server's bytes out of `pending`, the major
/// version rewritten. Holds back only a tail that may be the start of
/// `redis_version:` (a complete reply ends in `\n`, which that text has not,
/// so no finished reply is ever held).
fn replies(pending: &mut Vec<u8>, major: u8) -> Vec<u8> {
    let mut i = 0;
    while let Some(at) = find(&pending[i..], VERSION) {
        let digit = i + at + VERSION.len();
        if digit >= pending.len() {
            break;
        }
        pending[digit] = major;
        i = digit + 1;
    }
    let hold = (1..=VERSION.len())
        .rev()
        .find(|&k| k <= pending.len() && pending[pending.len() - k..] == VERSION[..k])
        .unwrap_or(0);
    pending.drain(..pending.len() - hold).collect()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Takes the complete requests out of `pending`, each `SET … NX … GET` with its
/// `GET` renamed (see the module docs). A request still incomplete stays; bytes
/// that are not a RESP array (never sent by redis-rs) pass as they are.
fn requests(pending: &mut Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        match parse(pending) {
            Parsed::Incomplete => return out,
            Parsed::Raw => {
                out.append(pending);
                return out;
            }
            Parsed::Command { len, args } => {
                let mut cmd: Vec<u8> = pending.drain(..len).collect();
                let is =
                    |r: &std::ops::Range<usize>, w: &[u8]| cmd[r.clone()].eq_ignore_ascii_case(w);
                if args.first().is_some_and(|a| is(a, b"SET"))
                    && args.iter().any(|a| is(a, b"NX"))
                    && let Some(get) = args.iter().skip(3).find(|a| is(a, b"GET")).cloned()
                {
                    cmd[get.start + 1] = b'X';
                }
                out.extend_from_slice(&cmd);
            }
        }
    }
}

enum Parsed {
    Incomplete,
    Raw,
    /// `len` bytes, the arguments at these ranges.
    Command {
        len: usize,
        args: Vec<std::ops::Range<usize>>,
    },
}

/// One `*N\r\n($L\r\n<L bytes>\r\n)×N` request at the start of `b`.
fn parse(b: &[u8]) -> Parsed {
    if b.is_empty() {
        return Parsed::Incomplete;
    }
    if b[0] != b'*' {
        return Parsed::Raw;
    }
    let Some((n, mut at)) = number(b, 1) else {
        return Parsed::Incomplete;
    };
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        if at >= b.len() {
            return Parsed::Incomplete;
        }
        if b[at] != b'$' {
            return Parsed::Raw;
        }
        let Some((len, start)) = number(b, at + 1) else {
            return Parsed::Incomplete;
        };
        if start + len + 2 > b.len() {
            return Parsed::Incomplete;
        }
        args.push(start..start + len);
        at = start + len + 2;
    }
    Parsed::Command { len: at, args }
}

/// The decimal number at `b[from..]` up to `\r\n`, and where what follows starts.
fn number(b: &[u8], from: usize) -> Option<(usize, usize)> {
    let end = from + find(b.get(from..)?, b"\r\n")?;
    let n = std::str::from_utf8(&b[from..end]).ok()?.parse().ok()?;
    Some((n, end + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_get_of_set_nx_only_and_keeps_partial_requests() {
        let set = b"*7\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nGET\r\n$2\r\nNX\r\n$2\r\nPX\r\n$2\r\n10\r\n$3\r\nGET\r\n";
        let mut p = set[..20].to_vec();
        assert!(requests(&mut p).is_empty(), "incomplete: held");
        p.extend_from_slice(&set[20..]);
        let out = requests(&mut p);
        assert!(p.is_empty());
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("$1\r\nk\r\n$3\r\nGET\r\n"),
            "the value GET stays: {text}"
        );
        assert!(text.ends_with("$3\r\nGXT\r\n"), "{text}");
        let mut plain = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".to_vec();
        assert_eq!(requests(&mut plain), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }

    #[test]
    fn rewrites_the_version_across_chunks() {
        let mut p = b"$30\r\n# Server\r\nredis_ver".to_vec();
        assert_eq!(replies(&mut p, b'6'), b"$30\r\n# Server\r\n");
        p.extend_from_slice(b"sion:7.0.15\r\n");
        assert_eq!(replies(&mut p, b'6'), b"redis_version:6.0.15\r\n");
    }
}
