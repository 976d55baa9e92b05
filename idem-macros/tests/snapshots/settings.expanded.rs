pub async fn create_order(
    cfg: &Config,
    user_id: u64,
    req_id: &str,
) -> Result<Order, AppError> {
    static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::create_order"),
        template: "order-create:<user_id>:<req_id>",
        scene: "order-create",
        lease: ::core::option::Option::Some(::core::time::Duration::from_secs(10)),
        ..::idem::__private::Spec::DEFAULT
    };
    let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("order-create:")
        .arg(&user_id)
        .lit(":")
        .arg(&req_id)
        .finish();
    let __idem_call = ::idem::__private::Guarded::<
        Result<Order, AppError>,
    >::new(&__IDEM_SPEC, __idem_key)
        .ttl({
            let __idem_d: ::core::time::Duration = ORDER_TTL;
            __idem_d
        })
        .wait({
            let __idem_d: ::core::time::Duration = cfg.duplicate_wait();
            __idem_d
        });
    ::idem::__idem_run!(
        __idem_run, __idem_run:: < Result < Order, AppError >, _, _ > (__idem_call, async
        { if let ::core::option::Option::Some(__idem_ret) =
        ::core::option::Option::None:: < Result < Order, AppError > > { return
        __idem_ret; } { insert_order(user_id, req_id). await } })
    )
        .await
}
async fn deduct(sku: &str) -> Result<(), AppError> {
    static __IDEM_LOCK: ::idem::__private::LockSpec = ::idem::__private::LockSpec {
        function: ::core::concat!(::core::module_path!(), "::deduct"),
        template: "lock:stock:<sku>",
        scene: "lock:stock",
        ..::idem::__private::LockSpec::DEFAULT
    };
    let __idem_key = ::idem::__private::KeyBuf::for_lock(&__IDEM_LOCK)
        .lit("lock:stock:")
        .arg(&sku)
        .finish();
    let __idem_call = ::idem::__private::Locked::<
        Result<(), AppError>,
    >::new(&__IDEM_LOCK, __idem_key)
        .lease({
            let __idem_d: ::core::time::Duration = Duration::from_secs(3);
            __idem_d
        })
        .max_hold({
            let __idem_d: ::core::time::Duration = STOCK_MAX_HOLD;
            __idem_d
        });
    ::idem::__private::lock::<
        Result<(), AppError>,
        _,
    >(
            __idem_call,
            async {
                if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                    Result<(), AppError>,
                > {
                    return __idem_ret;
                }
                { write_stock(sku).await }
            },
        )
        .await
}
