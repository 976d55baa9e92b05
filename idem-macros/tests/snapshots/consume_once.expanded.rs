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
    ::idem::__private::consume::run::<
        Result<idem::Consumed<()>, AppError>,
        _,
        _,
    >(
            &__IDEM_CONSUME,
            ::core::option::Option::None,
            &msg.id,
            ::core::option::Option::Some(&msg.order_no),
            &mut *tx,
            |__idem_tx| ::std::boxed::Box::pin(async {
                #[allow(unused_variables)]
                let tx = __idem_tx.conn();
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
            }),
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
    ::idem::__private::consume::run::<
        Result<idem::Consumed<u64>, AppError>,
        _,
        _,
    >(
            &__IDEM_CONSUME,
            ::core::option::Option::Some(&IDEM),
            &id,
            ::core::option::Option::Some(&cmd.order.no),
            &mut *conn,
            |__idem_tx| ::std::boxed::Box::pin(async {
                #[allow(unused_variables)]
                let conn = __idem_tx.conn();
                if let ::core::option::Option::Some(__idem_ret) = ::core::option::Option::None::<
                    ::idem::__private::consume::BodyOf<
                        Result<idem::Consumed<u64>, AppError>,
                    >,
                > {
                    return __idem_ret;
                }
                { Ok(cmd.amount) }
            }),
        )
        .await
}
