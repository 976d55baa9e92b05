//! `SqlStore::builder`: a store that opens its own pool with the table names,
//! pool size and migrations asked for; start-up errors convert into
//! `idem::Error` with `?` and keep their cause.

use idem::store::sql::{SqlStore, TableNames};
use idem::{How, Idem};

use crate::support::{AppError, Counter, tempdir, unique_ns};

async fn start(url: &str) -> idem::Result<Idem> {
    let store = SqlStore::builder(url)
        .tables(TableNames::new("biz_idem")?)
        .max_connections(2)
        .migrate(true)
        .connect()
        .await?;
    Idem::builder()
        .store(store)
        .namespace(unique_ns("builder"))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_connects_migrates_and_guards() {
    let dir = tempdir::TempDir::new();
    let url = format!("sqlite:{}", dir.path().join("idem.db").display());
    let idem = start(&url).await.expect("builder store");
    assert!(
        idem.verify(&[]).await.is_ok(),
        "the tables exist under the given names"
    );
    let runs = Counter::default();
    for want in [How::Executed, How::Replayed] {
        let r = runs.clone();
        let out = idem
            .guard("order", &[&"b-1"])
            .run(|| async move { Ok::<_, AppError>(r.hit()) })
            .await
            .unwrap();
        assert_eq!(out.how(), want);
    }
    assert_eq!(runs.get(), 1);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM biz_idem")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);

    // A start-up failure is one error type, with the cause kept.
    let e = start("oracle://db").await.unwrap_err();
    assert!(matches!(e, idem::Error::Store(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("unsupported database URL scheme `oracle`"),
        "{e}"
    );
    let e = start("postgres://nobody@127.0.0.1:1/none")
        .await
        .unwrap_err();
    let cause = std::error::Error::source(&e).expect("the store error");
    assert!(
        std::error::Error::source(cause).is_some(),
        "the driver error: {e:?}"
    );
}
