#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySuccess))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
}

fn main() {}
