#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess, PaySuccess -> Shipped))]
enum OrderStatus {
    WaitPay,
    #[state_machine(value = "DONE")]
    PaySuccess,
    #[state_machine(value = "DONE")]
    Shipped,
}

fn main() {}
