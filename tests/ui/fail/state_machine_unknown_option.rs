#![allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess), acyclc)]
enum OrderStatus {
    WaitPay,
    #[state_machine(valeu = "PAID")]
    PaySuccess,
}
fn main() {}
