//! The state check-and-set on Redis: one `apply(None, "PAID", ttl)` per call
//! on a fresh key (the applied path).
//!
//! - A: `idem.state_cas(..).apply(..)` on `RedisStore` (one `EVALSHA`);
//! - B: the native floor: the very same script (`__bench::STATE_CAS`) with
//!   the same keys and arguments, by hand on the same connection.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::StateCas;
use idem::store::redis::{__bench, redis};
use redis::{Script, Value};

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::{PREFIX, idem_on, sides, store};

const TTL: Duration = Duration::from_secs(15);

pub(crate) async fn apply(env: &Env) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let layout = store.clone();
    let idem = idem_on(env, store)?;
    let tag: Arc<str> = format!("{}a", env.tag).into();
    let a = op(move |i| {
        let (idem, tag) = (idem.clone(), Arc::clone(&tag));
        async move {
            let r = idem
                .state_cas("order-state", &[&&*tag, &i])
                .apply(None, "PAID", TTL)
                .await?;
            anyhow::ensure!(r == StateCas::Applied, "expected Applied, got {r:?}");
            black_box(r);
            Ok(())
        }
    });
    let head: Arc<str> = format!("{}:order-state:{}b:", env.ns, env.tag).into();
    let script = Arc::new(Script::new(__bench::STATE_CAS));
    let b = op(move |i| {
        let (mut con, head, script, layout) = (
            con.clone(),
            Arc::clone(&head),
            Arc::clone(&script),
            layout.clone(),
        );
        async move {
            // The key as idem lays it out, and its `:by` hash in the same slot.
            let state = layout.record_key(&format!("{head}{i}"));
            let mut by = state.clone();
            by.extend_from_slice(b":by");
            let owner = crate::sqlstore::owner();
            let reply: Value = script
                .key(state)
                .key(by)
                .arg("N")
                .arg("")
                .arg("PAID")
                .arg(TTL.as_millis() as u64)
                .arg(&owner[..])
                .invoke_async(&mut con)
                .await?;
            let Value::Array(a) = &reply else {
                anyhow::bail!("unexpected reply {reply:?}")
            };
            anyhow::ensure!(a.as_slice() == [Value::Int(0)], "not applied: {reply:?}");
            Ok(())
        }
    });
    Ok(sides(
        [a, b],
        [
            "A idem state_cas (one EVALSHA)",
            "B native floor: the same script by hand",
        ],
    ))
}
