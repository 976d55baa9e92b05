impl Payments {
    /// Charges an order once; the fence guards the ledger update.
    #[idempotent(key = "pay:<self.merchant>:<cmd.order_no>", lease = "10s", wait = "2s", fingerprint = [cmd], handle = &self.idem)]
    pub async fn charge(&self, cmd: &Charge, fence: idem::Fence) -> Result<Receipt, PayError> {
        self.ledger.apply(&cmd.order_no, cmd.amount, fence).await
    }
}
