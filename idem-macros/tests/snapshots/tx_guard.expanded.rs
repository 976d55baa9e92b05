pub async fn refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    order_no: &str,
    refund_id: &str,
    amount: i64,
    fence: idem::Fence,
) -> Result<i64, AppError> {
    static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::refund"),
        template: "refund:<order_no>:<refund_id>",
        scene: "refund",
        ttl: ::core::option::Option::Some(::core::time::Duration::from_secs(604_800)),
        ..::idem::__private::Spec::DEFAULT
    };
    let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("refund:")
        .arg(&order_no)
        .lit(":")
        .arg(&refund_id)
        .finish();
    let _ = &fence;
    let __idem_call = ::idem::__private::Guarded::<
        Result<i64, AppError>,
    >::new(&__IDEM_SPEC, __idem_key)
        .fingerprint_with(|__idem_fp| {
            fn __idem_fp_add<T: ::idem::bounds::Fingerprinted + ?::core::marker::Sized>(
                fp: &mut ::idem::__private::FingerprintBuilder,
                value: &T,
            ) {
                fp.add(value);
            }
            __idem_fp_add(__idem_fp, &amount);
        });
    ::idem::__private::run_in_tx::<
        Result<i64, AppError>,
        _,
        _,
    >(
            __idem_call,
            tx,
            |__idem_tx, __idem_f| {
                let tx = __idem_tx.transaction();
                let fence = __idem_f;
                ::std::boxed::Box::pin(async move {
                    if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                        Result<i64, AppError>,
                    > {
                        return __idem_ret;
                    }
                    {
                        sqlx::query(
                                "UPDATE t_pay SET refunded = refunded + $1 WHERE order_no = $2",
                            )
                            .bind(amount)
                            .bind(order_no)
                            .execute(&mut **tx)
                            .await?;
                        Ok(amount)
                    }
                })
            },
        )
        .await
}
