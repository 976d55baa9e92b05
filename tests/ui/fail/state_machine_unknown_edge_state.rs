#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay -> PaySucess, PaySuccess -> Shipped))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
}

fn main() {}
