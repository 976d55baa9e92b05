//! The seed's order machine (§3.4) that the state-machine suite runs on, and
//! what `#[derive(StateMachine)]` generates for it.

/// The seed's order machine (§3.4): acyclic, so a callback finding the order
/// shipped is a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(
    WaitPay -> PaySuccess,
    PaySuccess -> Shipped,
    Shipped -> Received,
    PaySuccess -> Refunding,
    Refunding -> Refunded,
    WaitPay -> Cancelled,
    PaySuccess -> Cancelled,
))]
pub enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
    Received,
    Refunding,
    #[state_machine(value = "REFUNDED")]
    Refunded,
    #[state_machine(value = "CANCELLED_BY_USER")]
    Cancelled,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("the body failed")]
    Body,
}

#[test]
fn derive_generates_the_table_and_the_text() {
    use OrderStatus::*;
    assert_eq!(OrderStatus::STATES.len(), 7);
    assert_eq!(Cancelled.as_str(), "CANCELLED_BY_USER");
    assert_eq!(OrderStatus::EDGES[0], (WaitPay, PaySuccess));
    assert_eq!(WaitPay.as_str(), "WAIT_PAY");
    assert_eq!(PaySuccess.to_string(), "PAY_SUCCESS");
    assert_eq!("REFUNDING".parse::<OrderStatus>().unwrap(), Refunding);
    let e = "PAID".parse::<OrderStatus>().unwrap_err();
    assert_eq!((e.machine, e.value.as_str()), ("OrderStatus", "PAID"));
    const CAN: bool = OrderStatus::can(OrderStatus::PaySuccess, OrderStatus::Shipped);
    assert!(CAN && !OrderStatus::can(Shipped, PaySuccess));
    assert!(OrderStatus::is_past(Received, PaySuccess));
    assert!(OrderStatus::is_past(Refunded, PaySuccess));
    assert!(!OrderStatus::is_past(Refunding, Shipped), "another branch");
    assert!(!OrderStatus::is_past(PaySuccess, PaySuccess));
    const { assert!(<OrderStatus as idem::StateMachine>::ACYCLIC) };
    assert_eq!(
        <OrderStatus as idem::StateMachine>::from_stored("SHIPPED"),
        Some(Shipped)
    );
}
