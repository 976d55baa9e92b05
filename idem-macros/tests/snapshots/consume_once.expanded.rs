async fn on_refund(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    msg: &RefundMsg,
) -> Result<idem::Consumed<()>, AppError> {
    static __IDEM_CONSUME: ::idem::__private::consume::ConsumeSpec = ::idem::__private::consume::ConsumeSpec::new(
        "on_refund",
        "on_refund",
        ::idem::consume::DEFAULT_LOG_TABLE,
        ::idem::consume::DEFAULT_RETENTION,
    );
    let __idem_handle = ::core::option::Option::None;
    let __idem_keys = ::idem::__private::consume::keys(
        &__IDEM_CONSUME,
        __idem_handle,
        &msg.id,
        ::core::option::Option::Some(&msg.order_no),
    );
    ::idem::__private::consume::observed::<
        Result<idem::Consumed<()>, AppError>,
    >(
            __idem_handle,
            &__idem_keys,
            async {
                let __idem_entry = match ::idem::__private::consume::begin::<
                    Result<idem::Consumed<()>, AppError>,
                    _,
                >(&__IDEM_CONSUME, &mut *tx, &__idem_keys)
                    .await
                {
                    ::idem::__private::consume::Begun::Go(__idem_entry) => __idem_entry,
                    ::idem::__private::consume::Begun::Done(__idem_done) => {
                        return __idem_done;
                    }
                };
                let __idem_out = async {
                    if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                        ::idem::__private::consume::BodyOf<
                            Result<idem::Consumed<()>, AppError>,
                        >,
                    > {
                        return __idem_ret;
                    }
                    {
                        insert_refund(tx, &msg.order_no).await?;
                        Ok(())
                    }
                }
                    .await;
                ::idem::__private::consume::finish::<
                    Result<idem::Consumed<()>, AppError>,
                    _,
                >(__idem_entry, &mut *tx, __idem_out)
                    .await
            },
        )
        .await
}
async fn on_paid(
    conn: &mut sqlx::SqliteConnection,
    id: &str,
    cmd: &Paid,
) -> Result<idem::Consumed<u64>, AppError> {
    static __IDEM_CONSUME: ::idem::__private::consume::ConsumeSpec = ::idem::__private::consume::ConsumeSpec::new(
        "billing",
        "order-paid",
        "billing_log",
        ::core::time::Duration::from_secs(2_592_000),
    );
    let __idem_handle = ::core::option::Option::Some(&IDEM);
    let __idem_keys = ::idem::__private::consume::keys(
        &__IDEM_CONSUME,
        __idem_handle,
        &id,
        ::core::option::Option::Some(&cmd.order.no),
    );
    ::idem::__private::consume::observed::<
        Result<idem::Consumed<u64>, AppError>,
    >(
            __idem_handle,
            &__idem_keys,
            async {
                let __idem_entry = match ::idem::__private::consume::begin::<
                    Result<idem::Consumed<u64>, AppError>,
                    _,
                >(&__IDEM_CONSUME, &mut *conn, &__idem_keys)
                    .await
                {
                    ::idem::__private::consume::Begun::Go(__idem_entry) => __idem_entry,
                    ::idem::__private::consume::Begun::Done(__idem_done) => {
                        return __idem_done;
                    }
                };
                let __idem_out = async {
                    if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                        ::idem::__private::consume::BodyOf<
                            Result<idem::Consumed<u64>, AppError>,
                        >,
                    > {
                        return __idem_ret;
                    }
                    { Ok(cmd.amount) }
                }
                    .await;
                ::idem::__private::consume::finish::<
                    Result<idem::Consumed<u64>, AppError>,
                    _,
                >(__idem_entry, &mut *conn, __idem_out)
                    .await
            },
        )
        .await
}
