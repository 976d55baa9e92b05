//! Script calls and commands written straight into one command buffer sized
//! up front.
//!
//! redis-rs's `ScriptInvocation` keeps each key and argument in a `Vec` of its
//! own and copies them all into the command it sends, and a `Cmd` built
//! argument by argument grows its two buffers a step at a time. The
//! allocation profile of issue 29 counted about ten allocations for one call
//! of the complete script and five reallocations for the native claim. At 64
//! callers every one of them is a `malloc`/`free` pair, often freed on another
//! worker thread than the one that allocated it, and glibc serialises those
//! frees on the arena lock: most `futex` calls of a Redis duplicate were that
//! lock. Here a call is one buffer for the bytes and one for the argument
//! bounds, both allocated once.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind, ToRedisArgs};

/// The argument slots every command here fits in (the largest, the state
/// check-and-set script, takes 10).
const ARGS: usize = 12;

/// A command of `bytes` bytes of arguments at most, roughly (the buffer grows
/// if a caller under-counts): `name` and one buffer each for the arguments.
pub(crate) fn command(name: &str, bytes: usize) -> Cmd {
    let mut cmd = Cmd::with_capacity(ARGS, name.len() + bytes);
    cmd.arg(name);
    cmd
}

/// One `EVALSHA` of a script: its keys, then its arguments, in the order the
/// script reads them. A server that does not know the script (a restart, a
/// `SCRIPT FLUSH`) gets it loaded and the same command again, as
/// `ScriptInvocation::invoke_async` does.
pub(crate) struct Eval<'s> {
    script: &'s Script,
    cmd: Cmd,
}

impl<'s> Eval<'s> {
    /// A call of `script` with `keys` keys and about `bytes` bytes of keys and
    /// arguments.
    pub(crate) fn new(script: &'s Script, keys: usize, bytes: usize) -> Self {
        // EVALSHA, the 40-digit hash, the key count.
        let mut cmd = command("EVALSHA", 48 + bytes);
        cmd.arg(script.get_hash()).arg(keys);
        Eval { script, cmd }
    }

    /// The next key (`KEYS[i]`); every key comes before the first argument.
    pub(crate) fn key(mut self, key: impl ToRedisArgs) -> Self {
        self.cmd.arg(key);
        self
    }

    /// The next argument (`ARGV[i]`).
    pub(crate) fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        self.cmd.arg(arg);
        self
    }

    /// Sends the call, loading the script first if the server lacks it.
    pub(crate) async fn query<T: FromRedisValue, C: ConnectionLike + Send>(
        &self,
        con: &mut C,
    ) -> RedisResult<T> {
        match self.cmd.query_async(con).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.script.prepare_invoke().load_async(con).await?;
                self.cmd.query_async(con).await
            }
            answered => answered,
        }
    }
}

/// One argument made of several byte strings, written into the command's
/// buffer one after another (a record's value: state byte, header, payload)
/// without a buffer of its own.
pub(crate) struct Parts<'a, const N: usize>(pub(crate) [&'a [u8]; N]);

impl<const N: usize> ToRedisArgs for Parts<'_, N> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        use std::io::Write as _;
        let mut w = out.writer_for_next_arg();
        for part in self.0 {
            // Writing to the command's own `Vec` cannot fail.
            let _ = w.write_all(part);
        }
    }
}

impl<const N: usize> redis::ToSingleRedisArg for Parts<'_, N> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes on the wire are `EVALSHA <hash> <key count> <keys> <args>`,
    /// as `ScriptInvocation` sends them.
    #[test]
    fn eval_packs_evalsha() {
        let script = Script::new("return KEYS[1]");
        let payload = vec![7u8; 300];
        let ours = Eval::new(&script, 1, 5 + 16 + payload.len() + 8)
            .key("dummy")
            .arg(Parts([&[1u8; 8], &[1u8; 8]]))
            .arg(&payload[..])
            .arg(60_000u64);
        let mut expected = redis::cmd("EVALSHA");
        expected
            .arg(script.get_hash())
            .arg(1)
            .arg("dummy")
            .arg(&[1u8; 16][..])
            .arg(&payload[..])
            .arg(60_000u64);
        assert_eq!(ours.cmd.get_packed_command(), expected.get_packed_command());
    }
}
