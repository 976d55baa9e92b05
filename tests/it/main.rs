mod sim;

fn main() {}
