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
        match (from, to) {
            (Self::WaitPay, Self::WaitPay) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `WaitPay -> WaitPay`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::WaitPay, Self::PaySuccess) => {}
            (Self::WaitPay, Self::Shipped) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `WaitPay -> Shipped`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::WaitPay, Self::Refunding) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `WaitPay -> Refunding`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::PaySuccess, Self::WaitPay) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `PaySuccess -> WaitPay`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::PaySuccess, Self::PaySuccess) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `PaySuccess -> PaySuccess`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::PaySuccess, Self::Shipped) => {}
            (Self::PaySuccess, Self::Refunding) => {}
            (Self::Shipped, Self::WaitPay) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Shipped -> WaitPay`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Shipped, Self::PaySuccess) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Shipped -> PaySuccess`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Shipped, Self::Shipped) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Shipped -> Shipped`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Shipped, Self::Refunding) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Shipped -> Refunding`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Refunding, Self::WaitPay) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Refunding -> WaitPay`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Refunding, Self::PaySuccess) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Refunding -> PaySuccess`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Refunding, Self::Shipped) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Refunding -> Shipped`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
            (Self::Refunding, Self::Refunding) => {
                ::core::panic!(
                    "`OrderStatus` declares no edge `Refunding -> Refunding`; its edges are `WaitPay -> PaySuccess`, `PaySuccess -> Shipped`, `PaySuccess -> Refunding`"
                )
            }
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
    ::idem::__private::state::observed::<
        Result<idem::Transition<()>, AppError>,
        _,
    >(
            &__IDEM_STATE,
            ::core::option::Option::None,
            &order_no,
            async {
                let __idem_savepoint = match ::idem::__private::state::begin::<
                    Result<idem::Transition<()>, AppError>,
                    OrderStatus,
                    _,
                    _,
                >(&__IDEM_STATE, __IDEM_FROM, __IDEM_TO, &mut *tx, &order_no)
                    .await
                {
                    ::idem::__private::state::Begun::Go(__idem_savepoint) => {
                        __idem_savepoint
                    }
                    ::idem::__private::state::Begun::Done(__idem_done) => {
                        return __idem_done;
                    }
                };
                let __idem_out = async {
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
                }
                    .await;
                ::idem::__private::state::finish::<
                    Result<idem::Transition<()>, AppError>,
                    _,
                >(__idem_savepoint, &mut *tx, __idem_out)
                    .await
            },
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
        ::idem::__private::state::observed::<
            Result<idem::Transition<()>, AppError>,
            _,
        >(
                &__IDEM_STATE,
                ::core::option::Option::None,
                &order_no,
                async {
                    let __idem_savepoint = match ::idem::__private::state::begin::<
                        Result<idem::Transition<()>, AppError>,
                        OrderStatus,
                        _,
                        _,
                    >(&__IDEM_STATE, __IDEM_FROM, __IDEM_TO, &mut *tx, &order_no)
                        .await
                    {
                        ::idem::__private::state::Begun::Go(__idem_savepoint) => {
                            __idem_savepoint
                        }
                        ::idem::__private::state::Begun::Done(__idem_done) => {
                            return __idem_done;
                        }
                    };
                    let __idem_out = async {
                        if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                            ::idem::__private::state::BodyOf<
                                Result<idem::Transition<()>, AppError>,
                            >,
                        > {
                            return __idem_ret;
                        }
                        { Ok(()) }
                    }
                        .await;
                    ::idem::__private::state::finish::<
                        Result<idem::Transition<()>, AppError>,
                        _,
                    >(__idem_savepoint, &mut *tx, __idem_out)
                        .await
                },
            )
            .await
    }
}
