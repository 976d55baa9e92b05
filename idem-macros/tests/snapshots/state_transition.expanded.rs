#[derive(Debug, Clone, Copy, PartialEq, Eq, idem::StateMachine)]
#[state_machine(edges(WaitPay->PaySuccess, PaySuccess->Shipped, PaySuccess->Refunding))]
enum OrderStatus {
    WaitPay,
    PaySuccess,
    Shipped,
    #[state_machine(value = "REFUND_PENDING")]
    Refunding,
}
impl OrderStatus {
    /// Every state, in declaration order; the first is the initial state.
    pub const STATES: &'static [Self] = &[
        Self::WaitPay,
        Self::PaySuccess,
        Self::Shipped,
        Self::Refunding,
    ];
    /// The declared edges, `(from, to)`.
    pub const EDGES: &'static [(Self, Self)] = &[
        (Self::WaitPay, Self::PaySuccess),
        (Self::PaySuccess, Self::Shipped),
        (Self::PaySuccess, Self::Refunding),
    ];
    /// The value stored in the state column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::WaitPay => "WAIT_PAY",
            Self::PaySuccess => "PAY_SUCCESS",
            Self::Shipped => "SHIPPED",
            Self::Refunding => "REFUND_PENDING",
        }
    }
    /// Is `from -> to` a declared edge?
    pub const fn can(from: Self, to: Self) -> bool {
        ::core::matches!(
            (from, to), (Self::WaitPay, Self::PaySuccess) | (Self::PaySuccess,
            Self::Shipped) | (Self::PaySuccess, Self::Refunding)
        )
    }
    /// Can `current` be reached from `to` along the edges (so a request
    /// for `to` finding `current` is a repeat)? Generated for acyclic
    /// machines only.
    pub const fn is_past(current: Self, to: Self) -> bool {
        ::core::matches!(
            (current, to), (Self::PaySuccess, Self::WaitPay) | (Self::Shipped,
            Self::WaitPay) | (Self::Shipped, Self::PaySuccess) | (Self::Refunding,
            Self::WaitPay) | (Self::Refunding, Self::PaySuccess)
        )
    }
    #[doc(hidden)]
    pub const fn __idem_edge(from: Self, to: Self) {
        if !Self::can(from, to) {
            ::core::panic!(
                "{}", ::idem::__private::state::EdgeMessage::new()
                .push("`OrderStatus` declares no edge `").push(Self::__idem_name(from))
                .push(" -> ").push(Self::__idem_name(to))
                .push("`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`")
                .as_str()
            )
        }
    }
    #[doc(hidden)]
    pub const fn __idem_name(self) -> &'static str {
        match self {
            Self::WaitPay => "WaitPay",
            Self::PaySuccess => "PaySuccess",
            Self::Shipped => "Shipped",
            Self::Refunding => "Refunding",
        }
    }
    #[doc(hidden)]
    pub const fn __idem_stored(value: &str) -> Self {
        match value.as_bytes() {
            b"WAIT_PAY" => Self::WaitPay,
            b"PAY_SUCCESS" => Self::PaySuccess,
            b"SHIPPED" => Self::Shipped,
            b"REFUND_PENDING" => Self::Refunding,
            _ => {
                match ::idem::__private::unknown_stored(
                    "OrderStatus",
                    value,
                    &["WAIT_PAY", "PAY_SUCCESS", "SHIPPED", "REFUND_PENDING"],
                ) {
                    ::core::option::Option::Some(__idem_msg) => {
                        ::core::panic!("{}", __idem_msg.as_str())
                    }
                    ::core::option::Option::None => ::core::unreachable!(),
                }
            }
        }
    }
}
impl ::idem::__private::state::StateMachine for OrderStatus {
    const NAME: &'static str = "OrderStatus";
    const STATES: &'static [Self] = Self::STATES;
    const EDGES: &'static [(Self, Self)] = Self::EDGES;
    const ACYCLIC: bool = true;
    fn stored(self) -> &'static str {
        Self::as_str(self)
    }
    fn from_stored(value: &str) -> ::core::option::Option<Self> {
        match value {
            "WAIT_PAY" => ::core::option::Option::Some(Self::WaitPay),
            "PAY_SUCCESS" => ::core::option::Option::Some(Self::PaySuccess),
            "SHIPPED" => ::core::option::Option::Some(Self::Shipped),
            "REFUND_PENDING" => ::core::option::Option::Some(Self::Refunding),
            _ => ::core::option::Option::None,
        }
    }
    fn can(from: Self, to: Self) -> bool {
        Self::can(from, to)
    }
    fn is_past(current: Self, to: Self) -> bool {
        Self::is_past(current, to)
    }
}
impl ::core::str::FromStr for OrderStatus {
    type Err = ::idem::__private::state::UnknownState;
    fn from_str(s: &str) -> ::core::result::Result<Self, Self::Err> {
        <Self as ::idem::__private::state::StateMachine>::from_stored(s)
            .ok_or_else(|| ::idem::__private::state::UnknownState {
                machine: "OrderStatus",
                value: ::std::borrow::ToOwned::to_owned(s),
            })
    }
}
impl ::core::fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        f.write_str(<Self as ::idem::__private::state::StateMachine>::stored(*self))
    }
}
::idem::__private::state::state_sqlx!(OrderStatus);
async fn on_paid(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    order_no: &str,
    pay_no: &str,
) -> Result<idem::Transition<()>, AppError> {
    static __IDEM_STATE: ::idem::__private::state::StateSpec = ::idem::__private::state::StateSpec::new(
        "t_order",
        "order_no",
        "status",
        ::core::option::Option::Some("version"),
        1usize,
    );
    const __IDEM_FROM: &[OrderStatus] = &[OrderStatus::WaitPay];
    const __IDEM_TO: OrderStatus = OrderStatus::PaySuccess;
    const _: () = OrderStatus::__idem_edge(__IDEM_FROM[0usize], __IDEM_TO);
    ::idem::__private::state::run::<
        Result<idem::Transition<()>, AppError>,
        _,
        _,
        _,
        _,
    >(
            &__IDEM_STATE,
            __IDEM_FROM,
            __IDEM_TO,
            ::core::option::Option::None,
            &order_no,
            &mut *tx,
            |__idem_tx| ::std::boxed::Box::pin(async {
                #[allow(unused_variables)]
                let tx = __idem_tx.conn();
                if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                    ::idem::__private::state::BodyOf<
                        Result<idem::Transition<()>, AppError>,
                    >,
                > {
                    return __idem_ret;
                }
                {
                    sqlx::query(
                            "INSERT INTO t_ledger (pay_no, order_no) VALUES ($1, $2)",
                        )
                        .bind(pay_no)
                        .bind(order_no)
                        .execute(&mut **tx)
                        .await?;
                    Ok(())
                }
            }),
        )
        .await
}
impl Orders {
    async fn paid(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
        order_no: &str,
    ) -> Result<idem::Transition<()>, AppError> {
        static __IDEM_STATE: ::idem::__private::state::StateSpec = ::idem::__private::state::StateSpec::new(
            "t_order",
            "order_no",
            "status",
            ::core::option::Option::None,
            1usize,
        );
        const __IDEM_FROM: &[OrderStatus] = &[OrderStatus::__idem_stored("WAIT_PAY")];
        const __IDEM_TO: OrderStatus = OrderStatus::__idem_stored("PAY_SUCCESS");
        const _: () = OrderStatus::__idem_edge(__IDEM_FROM[0usize], __IDEM_TO);
        ::idem::__private::state::run::<
            Result<idem::Transition<()>, AppError>,
            _,
            _,
            _,
            _,
        >(
                &__IDEM_STATE,
                __IDEM_FROM,
                __IDEM_TO,
                ::core::option::Option::None,
                &order_no,
                &mut *tx,
                |__idem_tx| ::std::boxed::Box::pin(async {
                    #[allow(unused_variables)]
                    let tx = __idem_tx.conn();
                    if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                        ::idem::__private::state::BodyOf<
                            Result<idem::Transition<()>, AppError>,
                        >,
                    > {
                        return __idem_ret;
                    }
                    { Ok(()) }
                }),
            )
            .await
    }
}
