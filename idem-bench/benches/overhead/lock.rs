//! The distributed lock on Redis: one uncontended acquire + release per call,
//! each on a fresh key (the cost of the lock itself, not of waiting for it).
//!
//! - A: `idem.lock(..).run_unfenced(body)` on `RedisStore` (one native
//!   `SET … NX PX … GET`, the watchdog armed for the body, the release
//!   script); in the fenced row `run(body)`, whose claim is the script that
//!   stamps a fence;
//! - B: the native floor: `SET key owner NX PX`, then a Lua compare-and-delete,
//!   by hand on the same multiplexed connection (no fence, no renewal);
//! - C: `rslock` 0.10 (Redlock, on this one server): `LockManager::lock`
//!   (`SET NX PX`), then `Lock::release` (its compare-and-delete script).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use idem::store::redis::redis;
use redis::Script;

use crate::Env;
use crate::harness::{Side, op};
use crate::redis::{PREFIX, idem_on, sides, store};

const LEASE: Duration = Duration::from_secs(5);

/// The floor's release: delete the key only if it still holds our owner.
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

pub(crate) async fn acquire_release(env: &Env, fenced: bool) -> anyhow::Result<Vec<Side>> {
    let store = store(env, PREFIX).await?;
    let con = store.connection();
    let idem = idem_on(env, store)?;
    let tag: Arc<str> = format!("{}a", env.tag).into();
    let a = op(move |i| {
        let (idem, tag) = (idem.clone(), Arc::clone(&tag));
        async move {
            let lock = idem.lock("lock:bench", &[&&*tag, &i]).lease(LEASE);
            if fenced {
                let fence = lock
                    .run(|grant| async move { Ok::<_, idem::Error>(grant.fence()) })
                    .await?;
                black_box(fence);
            } else {
                let valid = lock
                    .run_unfenced(|lease| async move { Ok::<_, idem::Error>(lease.is_valid()) })
                    .await?;
                black_box(valid);
            }
            Ok(())
        }
    });
    let head: Arc<str> = format!("{PREFIX}lock:{}:{}", env.ns, env.tag).into();
    let release = Arc::new(Script::new(RELEASE));
    let b = {
        let head = Arc::clone(&head);
        op(move |i| {
            let (mut con, head, release) = (con.clone(), Arc::clone(&head), Arc::clone(&release));
            async move {
                let key = format!("{head}b:{i}");
                let owner = crate::sqlstore::owner();
                let ok: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(&owner[..])
                    .arg("NX")
                    .arg("PX")
                    .arg(LEASE.as_millis() as u64)
                    .query_async(&mut con)
                    .await?;
                anyhow::ensure!(ok.is_some(), "SET NX found the lock key taken");
                black_box(&ok);
                let n: i64 = release
                    .key(&key)
                    .arg(&owner[..])
                    .invoke_async(&mut con)
                    .await?;
                anyhow::ensure!(n == 1, "release deleted {n} keys");
                Ok(())
            }
        })
    };
    let manager = Arc::new(rslock::LockManager::new(vec![env.redis_url.clone()]));
    let c = op(move |i| {
        let (manager, head) = (Arc::clone(&manager), Arc::clone(&head));
        async move {
            let resource = format!("{head}c:{i}");
            let lock = manager
                .lock(resource.as_bytes(), LEASE)
                .await
                .map_err(|e| anyhow::anyhow!("rslock: {e}"))?;
            black_box(lock.validity_time);
            lock.release().await;
            Ok(())
        }
    });
    Ok(sides(
        [a, b, c],
        [
            if fenced {
                "A idem.lock run (claim script + release script)"
            } else {
                "A idem.lock run_unfenced (native SET NX PX GET + release script)"
            },
            "B native floor: SET NX PX + Lua release by hand",
            "C rslock 0.10 (Redlock, one server)",
        ],
    ))
}
