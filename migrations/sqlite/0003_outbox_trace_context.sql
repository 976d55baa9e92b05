ALTER TABLE idem_outbox ADD COLUMN traceparent TEXT;
ALTER TABLE idem_outbox ADD COLUMN tracestate TEXT;
