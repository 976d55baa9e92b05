CREATE INDEX IF NOT EXISTS idem_records_state_idx ON idem_records (state, idem_key);
