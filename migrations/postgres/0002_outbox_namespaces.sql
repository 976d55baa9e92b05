ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS namespace TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX IF NOT EXISTS idem_outbox_ns_uk ON idem_outbox (namespace, topic, business_id);
DROP INDEX IF EXISTS idem_outbox_biz_uk;
