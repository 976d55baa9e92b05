//! One-time tokens on Redis: one issue and one consume per call.
//!
//! - A: `idem.tokens().issue(..)` (one `SET PX` of the token's digest key),
//!   then `consume(..).run(body)` (the take script, which spends the token
//!   before the body runs; nothing after a body that succeeds): 2 round trips;
//! - B: the native floor: a token of the same size (two UUID v4s) `SET PX`
//!   by hand, then a Lua get-and-delete: 2 round trips, no give-back (a token
//!   whose consumer fails is lost), no digest.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::store::redis::redis;
use redis::Script;

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::{PREFIX, idem_on, sides, store};

const TTL: Duration = Duration::from_secs(15);
const LEASE: Duration = Duration::from_secs(5);

/// The floor's consume: the value, deleted in the same step.
const GET_AND_DELETE: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v
"#;

pub(crate) async fn issue_consume(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let a = op(move |_| {
        let idem = idem.clone();
        async move {
            let tokens = idem.tokens();
            let token = tokens.issue("token:bench", TTL).await?;
            let fence = tokens
                .consume("token:bench", token.as_str())
                .lease(LEASE)
                .run(|fence| async move { Ok::<_, idem::Error>(fence) })
                .await?;
            black_box(fence);
            Ok(())
        }
    });
    let head: Arc<str> = format!("{PREFIX}tok:{}:", env.ns).into();
    let take = Arc::new(Script::new(GET_AND_DELETE));
    let b = op(move |_| {
        let (mut con, head, take) = (con.clone(), Arc::clone(&head), Arc::clone(&take));
        async move {
            let (x, y) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
            let key = format!("{head}{}{}", x.simple(), y.simple());
            let ok: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg("I")
                .arg("PX")
                .arg(TTL.as_millis() as u64)
                .query_async(&mut con)
                .await?;
            anyhow::ensure!(ok.is_some(), "SET answered nil");
            let v: Option<String> = take.key(&key).invoke_async(&mut con).await?;
            anyhow::ensure!(v.as_deref() == Some("I"), "get-and-delete found {v:?}");
            Ok(())
        }
    });
    Ok(sides(
        [a, b],
        [
            "A idem tokens: issue + consume (SET, take script)",
            "B native floor: SET PX + Lua get-and-delete by hand",
        ],
    ))
}
