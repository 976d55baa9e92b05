//! The builder methods that declare backstops on the handle: a plain-API
//! call's constraint, and the modules whose `handle = …` functions this handle
//! serves (see [`backstop`](crate::backstop) for how `verify()` uses them).
//! They live with the handle so the backstop layer, below it, never names it.

use super::IdemBuilder;

impl IdemBuilder {
    /// Registers the backstop of a plain-API call (`guard(..).backstop(..)`),
    /// so [`Idem::verify`](crate::Idem::verify) checks it at start-up, before
    /// any call ran; `owner` names the call in its message (a function path,
    /// a route). `#[idempotent]` functions need no registration.
    ///
    /// ```
    /// let idem = idem::Idem::builder()
    ///     .store(idem::MemoryStore::new())
    ///     .backstop("shop::create_order", "uk_orders_order_no")
    ///     .build()?;
    /// # Ok::<(), idem::Error>(())
    /// ```
    pub fn backstop(mut self, owner: impl Into<String>, constraint: impl Into<String>) -> Self {
        self.backstop_decls
            .plain
            .push((owner.into(), constraint.into()));
        self
    }

    /// This handle serves the `#[idempotent(handle = …)]` functions under the
    /// module path `module` (`"my_app::orders"`, or `module_path!()`): its
    /// `verify()` checks their backstops too. Functions without `handle = …`
    /// run on the installed handle and are checked by every handle.
    pub fn functions(mut self, module: impl Into<String>) -> Self {
        self.backstop_decls.modules.push(module.into());
        self
    }
}
