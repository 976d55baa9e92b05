pub async fn create_order(
    db: &PgPool,
    user_id: u64,
    req_id: &str,
    req: CreateOrder,
) -> Result<Order, AppError> {
    static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::create_order"),
        template: "order-create:<user_id>:<req_id>",
        scene: "order-create",
        ttl: ::core::option::Option::Some(::core::time::Duration::from_secs(86_400)),
        backstop: ::core::option::Option::Some("uk_order_no"),
        ..::idem::__private::Spec::DEFAULT
    };
    ::idem::__private::declare_backstop!(__IDEM_SPEC, false);
    let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("order-create:")
        .arg(&user_id)
        .lit(":")
        .arg(&req_id)
        .finish();
    let __idem_call = ::idem::__private::Guarded::<
        Result<Order, AppError>,
    >::new(&__IDEM_SPEC, __idem_key)
        .detect(|__idem_e| ::idem::__private::detect!(__idem_e))
        .on_conflict(|| {
            let __idem_p0 = &db;
            let __idem_p1 = &user_id;
            let __idem_p2 = &req_id;
            let __idem_p3 = &req;
            find_order(__idem_p0, __idem_p1, __idem_p2, __idem_p3)
        });
    ::idem::__idem_run!(
        __idem_run, __idem_run:: < Result < Order, AppError >, _, _ > (__idem_call, async
        { if let ::core::option::Option::Some(__idem_ret) =
        ::core::option::Option::None:: < Result < Order, AppError > > { return
        __idem_ret; } { let order = insert_order(db, user_id, req_id, & req). await ?;
        Ok(order) } })
    )
        .await
}
