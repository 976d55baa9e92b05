//! MySQL/MariaDB claim texts shared by the store's claim (`ddl.rs`) and the
//! transactional guard's claim in the caller's transaction (`in_tx.rs`): one
//! upsert, two fence sources.

use super::stmt::Stmt;

/// MySQL's claim upsert of `t`: takes a missing or expired key, leaves a live
/// row alone. `LAST_INSERT_ID(…)` in the row marks "this statement took the
/// key"; the branch that leaves a live row alone resets it to 0, so the OK
/// packet's last-insert-id says whether we claimed, and with which fence
/// (rows-affected cannot: the driver sets CLIENT_FOUND_ROWS). Assignments run
/// left to right and see earlier ones, so `expires_at`, which every condition
/// reads, is assigned last. Not `INSERT IGNORE`: it would turn truncation
/// errors into warnings. `fence` is the new row's fence (a `LAST_INSERT_ID`
/// call), `renewed` the fence that replaces an expired row's.
pub(super) fn mysql_claim(t: &str, fence: &str, renewed: &str) -> String {
    let expired = format!("expires_at <= {MYSQL_NOW}");
    format!(
        "INSERT INTO {t} (idem_key, state, owner, fence, fingerprint, payload, expires_at) \
         VALUES (?, 0, ?, {fence}, ?, NULL, {MYSQL_NOW} + INTERVAL ? MICROSECOND) \
         ON DUPLICATE KEY UPDATE \
           state = IF({expired}, 0, state), \
           owner = IF({expired}, VALUES(owner), owner), \
           fingerprint = IF({expired}, VALUES(fingerprint), fingerprint), \
           payload = IF({expired}, NULL, payload), \
           fence = IF({expired}, {renewed}, IF(LAST_INSERT_ID(0) = 0, fence, fence)), \
           expires_at = IF({expired}, VALUES(expires_at), expires_at)"
    )
}

/// MySQL's clock, at the statement's start.
pub(super) const MYSQL_NOW: &str = "UTC_TIMESTAMP(6)";

/// The MySQL claim the transactional guard runs in the *caller's* transaction
/// (binds: key, owner, fingerprint, lease µs): the store's upsert without the
/// fence slot. A slot's counter row, once updated, stays locked until the
/// caller's transaction ends, so every claim of the keys sharing that slot
/// (one of 64), the handle's own store included, and a guard nested in the
/// transactional body, waited for the caller's commit. The fence is the
/// database clock in microseconds, or one more than the expired row's fence
/// when that is higher: it never goes backwards while the row exists, and a
/// purged key's next fence comes from a later clock (as every fence of the
/// store is at most the clock at its hand-out, plus one per claim of its slot
/// within one microsecond). The only lock taken is the key's own row's.
pub(crate) fn mysql_claim_in_tx(t: &str) -> Stmt {
    let now_us = format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {MYSQL_NOW})");
    Stmt::from(mysql_claim(
        t,
        &format!("LAST_INSERT_ID({now_us})"),
        &format!("LAST_INSERT_ID(GREATEST(fence + 1, {now_us}))"),
    ))
}
