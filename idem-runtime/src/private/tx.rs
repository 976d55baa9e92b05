//! `run_in_tx`: the call an `#[idempotent(tx = …)]` expansion makes. It hands
//! the body to the transactional guard (`Guard::in_tx`), as the non-macro
//! form does.

use std::future::Future;
use std::pin::Pin;

use super::Guarded;
use super::bounds::Returns;
use super::site::Site;
use crate::db::{InTx, TxBody, TxDb};
use crate::guard::Guard;
use crate::outcome::Fence;

/// Runs a guarded call whose record is written in the caller's transaction
/// `tx`. Named with the declared return type in its turbofish, like
/// [`run`](super::run), so an unstorable result is one error there.
pub fn run_in_tx<'g, 't, R, DB, B>(
    guarded: Guarded<'g, R>,
    tx: &'g mut sqlx::Transaction<'t, DB>,
    body: B,
) -> Pin<Box<dyn Future<Output = R> + Send + 'g>>
where
    R: Returns + 'g,
    DB: TxDb,
    B: for<'a> FnOnce(&'a mut InTx<'g, 't, DB>, Fence) -> TxBody<'a, R::Ok, R::Err> + Send + 'g,
{
    Box::pin(async move {
        let (spec, key, handle, fingerprint, dynamic) = guarded.into_parts();
        let site = match Site::open(spec, handle, key, &dynamic) {
            Ok(site) => site,
            Err(e) => return R::from_result(Err(e.into())),
        };
        let guard = Guard {
            idem: site.idem,
            key: site.key,
            policy: site.policy,
            fingerprint,
            technique: crate::observe::Technique::Idempotent,
        };
        let r = guard
            .in_tx(tx)
            .savepoint(spec.savepoint)
            .run_registered(body)
            .await
            .map(crate::outcome::Outcome::into_inner);
        R::from_result(r)
    })
}
