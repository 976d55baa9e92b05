// `acyclic` asks for reachability (`is_past`); this machine loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(acyclic, edges(Open -> Closed, Closed -> Open))]
enum Door {
    Open,
    Closed,
}

// Without `acyclic`, a cyclic machine has no `is_past` to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(On -> Off, Off -> On))]
enum Switch {
    On,
    Off,
}

fn main() {
    let _ = Switch::is_past(Switch::On, Switch::Off);
}
