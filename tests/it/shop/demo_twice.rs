//! Issue 27: `examples/shop --demo` on Redis or PostgreSQL must pass when run
//! again on the same servers. Each run is a fresh shop (a new SQLite business
//! database, as `main.rs` makes one per process) over the shared servers.

use crate::shop::support::{app::IdemStore, run};

async fn twice(store: IdemStore) {
    for attempt in 1..=2 {
        let (report, shop) = run::demo(&store, None)
            .await
            .unwrap_or_else(|e| panic!("{store:?} run {attempt}: {e}"));
        let verdicts: Vec<_> = report.rounds.iter().map(|r| (r.name, r.pass)).collect();
        assert!(
            report.rounds.iter().all(|r| r.pass),
            "{store:?} run {attempt} (namespace {}): {verdicts:?}\n{:#?}",
            shop.backends.namespace,
            report.rounds
        );
        assert_eq!(report.callbacks, (1, 4, 1), "{store:?} run {attempt}");
        assert_eq!(report.form, (201, 409), "{store:?} run {attempt}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shop_demo_passes_twice_in_a_row_on_redis() {
    twice(IdemStore::Redis(
        crate::support::redis_server::SHARED_URL.to_owned(),
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shop_demo_passes_twice_in_a_row_on_postgres() {
    let url = std::env::var("IDEM_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    twice(IdemStore::Postgres(url)).await;
}
