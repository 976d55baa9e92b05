//! Namespaces on one outbox table (PostgreSQL, MariaDB, SQLite): two services
//! enqueuing the same (topic, business id) under their own namespaces each
//! get a stored message of their own, and a table created before namespaces
//! were part of its uniqueness is brought up to date by `migrate()`.

use idem::Store as _;
use idem::db::Dialect;
use idem::outbox::OutboxTable;

use crate::consume::support::Pool;
use crate::outbox::support::{OrderMsg, business_tx, producer_db};

fn msg(business_id: &str) -> OrderMsg {
    OrderMsg {
        id: String::new(),
        topic: "orders".into(),
        business_id: business_id.into(),
        step: 0,
        key: String::new(),
    }
}

fn table(namespace: &str) -> OutboxTable<'_> {
    OutboxTable {
        namespace,
        ..OutboxTable::default()
    }
}

/// Both namespaces' messages exist under the ids `enqueue` returned, and a
/// retry in either namespace adds nothing.
async fn two_namespaces(db: &crate::consume::support::LogDb) {
    let billing = business_tx(db, table("billing"), &msg("o-1"), false).await;
    let shipping = business_tx(db, table("shipping"), &msg("o-1"), false).await;
    assert_ne!(billing, shipping);
    for (id, ns) in [(&billing, "billing"), (&shipping, "shipping")] {
        let n = db
            .scalar(&format!(
                "SELECT COUNT(*) FROM idem_outbox WHERE id = '{id}' AND namespace = '{ns}'"
            ))
            .await;
        assert_eq!(n, 1, "the message {id} of {ns} is stored");
    }
    assert_eq!(
        business_tx(db, table("shipping"), &msg("o-1"), false).await,
        shipping
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM idem_outbox").await, 2);
}

async fn namespaces_share_a_table(dialect: Dialect) {
    let db = producer_db(dialect).await;
    two_namespaces(&db).await;
}

#[tokio::test]
async fn two_namespaces_share_one_table_on_postgres() {
    namespaces_share_a_table(Dialect::Postgres).await;
}

#[tokio::test]
async fn two_namespaces_share_one_table_on_mariadb() {
    namespaces_share_a_table(Dialect::MySql).await;
}

#[tokio::test]
async fn two_namespaces_share_one_table_on_sqlite() {
    namespaces_share_a_table(Dialect::Sqlite).await;
}

/// The outbox as the first migration step created it, with one message.
async fn first_step_outbox(db: &crate::consume::support::LogDb, dialect: Dialect) {
    db.exec("DROP TABLE idem_outbox").await;
    if dialect == Dialect::MySql {
        db.exec("DROP TABLE idem_outbox_order_locks").await;
    }
    let steps = idem::store::sql::migrations(dialect, &idem::store::sql::TableNames::default());
    for s in steps[0]
        .1
        .split(";\n")
        .filter(|s| s.contains("idem_outbox"))
    {
        db.exec(s).await;
    }
    let now = match dialect {
        Dialect::Postgres => "now()",
        Dialect::MySql => "UTC_TIMESTAMP(6)",
        _ => "0",
    };
    db.exec(&format!(
        "INSERT INTO idem_outbox (id, topic, business_id, payload, state, attempts, due_at, created_at) \
         VALUES ('obx-old', 'orders', 'o-1', 'x', 0, 0, {now}, {now})"
    ))
    .await;
}

async fn migrate_upgrades(dialect: Dialect) {
    let db = producer_db(dialect).await;
    first_step_outbox(&db, dialect).await;
    // Before the upgrade the store's own check names what is missing.
    assert!(
        db.store.verify().await.is_err(),
        "an old table fails verify"
    );
    db.store.migrate().await.expect("migrate upgrades");
    db.store.migrate().await.expect("and runs again");
    db.store
        .verify()
        .await
        .expect("the upgraded table verifies");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM idem_outbox WHERE namespace = '' AND id = 'obx-old'")
            .await,
        1,
        "the old message stays, in the empty namespace"
    );
    // The old (topic, business id) key is gone: another namespace may use the pair.
    let id = business_tx(&db, table("billing"), &msg("o-1"), false).await;
    assert_eq!(
        db.scalar(&format!(
            "SELECT COUNT(*) FROM idem_outbox WHERE id = '{id}'"
        ))
        .await,
        1
    );
    if let Pool::My(_) = db.pool {
        // Ordered enqueues need the lock table the upgrade adds.
        let ordered = table("billing").ordered(true);
        business_tx(&db, ordered, &msg("o-2"), false).await;
    }
}

#[tokio::test]
async fn migrate_upgrades_an_outbox_without_namespaces_on_postgres() {
    migrate_upgrades(Dialect::Postgres).await;
}

#[tokio::test]
async fn migrate_upgrades_an_outbox_without_namespaces_on_mariadb() {
    migrate_upgrades(Dialect::MySql).await;
}

#[tokio::test]
async fn migrate_upgrades_an_outbox_without_namespaces_on_sqlite() {
    migrate_upgrades(Dialect::Sqlite).await;
}
