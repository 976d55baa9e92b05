pub async fn deduct(
    db: &PgPool,
    order_no: &str,
    fence: idem::Fence,
) -> Result<(), AppError> {
    static __IDEM_LOCK: ::idem::__private::LockSpec = ::idem::__private::LockSpec {
        function: ::core::concat!(::core::module_path!(), "::deduct"),
        template: "lock:deduct:order:<order_no>",
        scene: "lock:deduct:order",
        lease: ::core::option::Option::Some(::core::time::Duration::from_secs(3)),
        wait: ::core::option::Option::Some(::core::time::Duration::from_millis(500)),
        max_hold: ::core::option::Option::Some(::core::time::Duration::from_secs(60)),
    };
    let __idem_key = ::idem::__private::KeyBuf::for_lock(&__IDEM_LOCK)
        .lit("lock:deduct:order:")
        .arg(&order_no)
        .finish();
    let __idem_fence = ::idem::__private::FenceCell::new();
    let __idem_call = ::idem::__private::Locked::<
        Result<(), AppError>,
    >::new(&__IDEM_LOCK, __idem_key)
        .fence(&__idem_fence);
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
                let fence = __idem_fence.take(fence);
                { write_stock(db, order_no, fence).await }
            },
        )
        .await
}
async fn nightly(day: u32) -> Result<u64, AppError> {
    static __IDEM_LOCK: ::idem::__private::LockSpec = ::idem::__private::LockSpec {
        function: ::core::concat!(::core::module_path!(), "::nightly"),
        template: "lock:report:<day>",
        scene: "lock:report",
        ..::idem::__private::LockSpec::DEFAULT
    };
    let __idem_key = ::idem::__private::KeyBuf::for_lock(&__IDEM_LOCK)
        .lit("lock:report:")
        .arg(&day)
        .finish();
    let __idem_call = ::idem::__private::Locked::<
        Result<u64, AppError>,
    >::new(&__IDEM_LOCK, __idem_key)
        .handle({
            let __idem_h: &::idem::Idem = &IDEM;
            __idem_h
        });
    ::idem::__private::lock::<
        Result<u64, AppError>,
        _,
    >(
            __idem_call,
            async {
                if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                    Result<u64, AppError>,
                > {
                    return __idem_ret;
                }
                { Ok(1) }
            },
        )
        .await
}
async fn submit(req_id: u64, form: &Form) -> Result<u64, AppError> {
    static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::submit"),
        template: "order-create:<req_id>",
        scene: "order-create",
        ..::idem::__private::Spec::DEFAULT
    };
    let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("order-create:")
        .arg(&req_id)
        .finish();
    let __idem_call = ::idem::__private::Guarded::<
        Result<u64, AppError>,
    >::new(&__IDEM_SPEC, __idem_key)
        .token(::core::convert::AsRef::<str>::as_ref(&form.token));
    ::idem::__idem_run!(
        __idem_run, __idem_run:: < Result < u64, AppError >, _, _ > (__idem_call, async {
        if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::
        < Result < u64, AppError > > { return __idem_ret; } { Ok(req_id) } })
    )
        .await
}
