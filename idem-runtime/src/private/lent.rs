//! [`Lent`]: the caller's connection handed back to a `#[state_transition]` or
//! `#[consume_once]` body for its turn, between the runtime's statement before
//! it and the savepoint's end after it.
//!
//! Why a by-value wrapper and two lifetimes: the body is the user's block, so
//! it must see its `tx` parameter with the type written, while the runtime
//! holds the connection around it. The expansion passes a higher-ranked
//! closure `|__idem_tx| Box::pin(async { let tx = __idem_tx.conn(); { body } })`:
//! the block takes the wrapper by moving it (it is not `Copy`) and borrows the
//! function's other parameters as the body wrote them, as the former plain
//! block did. `'g: 'a`, implied by the field, lets the boxed future hold those
//! borrows; boxing with `Send` keeps the function's future `Send` (an
//! `AsyncFnOnce` body cannot be proven `Send` by rustc 1.95).

/// The connection lent to the body for the turn `'a` of a call borrowing it for `'g`.
#[derive(Debug)]
pub struct Lent<'a, 'g, C: ?Sized>(&'a mut &'g mut C);

impl<'a, 'g, C: ?Sized> Lent<'a, 'g, C> {
    pub(super) fn new(conn: &'a mut &'g mut C) -> Self {
        Lent(conn)
    }

    /// The connection, with the type of the function's own parameter.
    pub fn conn(self) -> &'a mut C {
        self.0
    }
}
