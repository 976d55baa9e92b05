ALTER TABLE idem_records ADD KEY idem_records_state_idx (state, idem_key);
