async fn create_order(
    State(app): State<App>,
    user: User,
    Json(req): Json<CreateOrder>,
) -> Result<::idem::http::Replied<(StatusCode, Json<Order>)>, AppError> {
    static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::create_order"),
        template: "order-create:<user.id>:<req.order_no>",
        scene: "order-create",
        backstop: ::core::option::Option::Some("uk_order_no"),
        ..::idem::__private::Spec::DEFAULT
    };
    ::idem::__private::declare_backstop!(__IDEM_SPEC, true);
    let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("order-create:")
        .arg(&user.id)
        .lit(":")
        .arg(&req.order_no)
        .finish();
    let __idem_unkept = ::idem::__private::Unkept::<
        Result<(StatusCode, Json<Order>), AppError>,
    >::new();
    let __idem_call = ::idem::__private::Guarded::<
        ::idem::__private::Http<Result<(StatusCode, Json<Order>), AppError>>,
    >::new(&__IDEM_SPEC, __idem_key)
        .handle({
            let __idem_h: &::idem::Idem = &app.idem;
            __idem_h
        })
        .fingerprint_with(|__idem_fp| {
            fn __idem_fp_add<T: ::idem::bounds::Fingerprinted + ?::core::marker::Sized>(
                fp: &mut ::idem::__private::FingerprintBuilder,
                value: &T,
            ) {
                fp.add(value);
            }
            __idem_fp_add(__idem_fp, &req);
        })
        .detect(|__idem_e| ::idem::__private::detect!(__idem_e))
        .on_conflict(|| ::idem::__private::stored({
            let __idem_p0 = &app;
            let __idem_p1 = &user;
            let __idem_p2 = &req;
            find_order(__idem_p0, __idem_p1, __idem_p2)
        }));
    ::idem::__private::finish_marked::<
        Result<(StatusCode, Json<Order>), AppError>,
        _,
    >(
        &__idem_unkept,
        ::idem::__private::reported(
                ::idem::__idem_run!(
                    __idem_run, __idem_run:: < ::idem::__private::Http < Result <
                    (StatusCode, Json < Order >), AppError > >, _, _ > (__idem_call,
                    async { ::idem::__private::Http::keep(& __idem_unkept, async { if let
                    ::core::option::Option::Some(__idem_ret) =
                    ::core::option::Option::None:: < Result < (StatusCode, Json < Order
                    >), AppError > > { return __idem_ret; } { Ok((StatusCode::CREATED,
                    Json(insert(& app, & user, & req). await ?))) } } . await) })
                ),
            )
            .await,
    )
}
