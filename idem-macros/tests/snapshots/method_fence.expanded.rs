impl Payments {
    /// Charges an order once; the fence guards the ledger update.
    pub async fn charge(
        &self,
        cmd: &Charge,
        fence: idem::Fence,
    ) -> Result<Receipt, PayError> {
        static __IDEM_SPEC: ::idem::__private::Spec = ::idem::__private::Spec {
            function: ::core::concat!(::core::module_path!(), "::charge"),
            template: "pay:<self.merchant>:<cmd.order_no>",
            scene: "pay",
            lease: ::core::option::Option::Some(::core::time::Duration::from_secs(10)),
            wait: ::core::option::Option::Some(::core::time::Duration::from_secs(2)),
            ..::idem::__private::Spec::DEFAULT
        };
        let __idem_key = ::idem::__private::KeyBuf::new(&__IDEM_SPEC)
            .lit("pay:")
            .arg(&self.merchant)
            .lit(":")
            .arg(&cmd.order_no)
            .finish();
        let __idem_fence = ::idem::__private::FenceCell::new();
        let __idem_call = ::idem::__private::Guarded::<
            Result<Receipt, PayError>,
        >::new(&__IDEM_SPEC, __idem_key)
            .handle({
                let __idem_h: &::idem::Idem = &self.idem;
                __idem_h
            })
            .fingerprint_with(|__idem_fp| {
                fn __idem_fp_add<
                    T: ::idem::bounds::Fingerprinted + ?::core::marker::Sized,
                >(fp: &mut ::idem::__private::FingerprintBuilder, value: &T) {
                    fp.add(value);
                }
                __idem_fp_add(__idem_fp, &cmd);
            })
            .fence(&__idem_fence);
        ::idem::__idem_run!(
            __idem_run, __idem_run:: < Result < Receipt, PayError >, _, _ > (__idem_call,
            async { if let ::core::option::Option::Some(__idem_ret) =
            ::core::option::Option::None:: < Result < Receipt, PayError > > { return
            __idem_ret; } let fence = __idem_fence.take(fence); { self.ledger.apply(& cmd
            .order_no, cmd.amount, fence). await } })
        )
            .await
    }
}
