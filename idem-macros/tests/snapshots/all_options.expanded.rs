async fn refund(tenant: &str, refund_id: Uuid) -> Result<Refund, RefundError> {
    #![allow(unused_mut)]
    static __IDEM_SPEC: ::my_idem::__private::Spec = ::my_idem::__private::Spec {
        function: ::core::concat!(::core::module_path!(), "::refund"),
        template: "refund:<tenant>:<refund_id>:v2",
        scene: "refund",
        ttl: ::core::option::Option::Some(::core::time::Duration::from_secs(604_800)),
        lease: ::core::option::Option::Some(::core::time::Duration::from_secs(90)),
        max_hold: ::core::option::Option::Some(::core::time::Duration::from_secs(1800)),
        concurrent: ::my_idem::__private::Concurrency::Reject,
        version: 2,
        ..::my_idem::__private::Spec::DEFAULT
    };
    let __idem_key = ::my_idem::__private::KeyBuf::new(&__IDEM_SPEC)
        .lit("refund:")
        .arg(&tenant)
        .lit(":")
        .arg(&refund_id)
        .lit(":v2")
        .finish();
    fn __idem_terminal<E: ::my_idem::bounds::TerminalError>(
        is_terminal: fn(&E) -> bool,
    ) -> ::my_idem::__private::Terminal<E> {
        ::my_idem::__private::Terminal::new(is_terminal)
    }
    let __idem_call = ::my_idem::__private::Guarded::<
        Result<Refund, RefundError>,
    >::new(&__IDEM_SPEC, __idem_key)
        .handle({
            let __idem_h: &::my_idem::Idem = &*HANDLE;
            __idem_h
        })
        .terminal(__idem_terminal(RefundError::is_final));
    ::my_idem::__idem_run!(
        __idem_run, __idem_run:: < Result < Refund, RefundError >, _, _ > (__idem_call,
        async { if let ::core::option::Option::Some(__idem_ret) =
        ::core::option::Option::None:: < Result < Refund, RefundError > > { return
        __idem_ret; } { use std::result::Result as Spec; let mut r : Spec < Refund,
        RefundError > = gateway::refund(refund_id). await; r } })
    )
        .await
}
