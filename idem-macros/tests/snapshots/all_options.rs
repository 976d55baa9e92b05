#[idem::idempotent(
    key = "refund:<tenant>:<refund_id>:v2",
    ttl = "7d",
    lease = "1m30s",
    max_hold = "30m",
    concurrent = "reject",
    version = 2,
    terminal = RefundError::is_final,
    crate = "::my_idem",
    handle = &*HANDLE
)]
async fn refund(tenant: &str, refund_id: Uuid) -> Result<Refund, RefundError> {
    #![allow(unused_mut)]
    use std::result::Result as Spec;
    let mut r: Spec<Refund, RefundError> = gateway::refund(refund_id).await;
    r
}
