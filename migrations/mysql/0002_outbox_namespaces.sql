ALTER TABLE idem_outbox ADD COLUMN namespace VARBINARY(255) NOT NULL DEFAULT '' AFTER seq, ADD UNIQUE KEY idem_outbox_ns_uk (namespace, topic, business_id), DROP INDEX idem_outbox_biz_uk;
CREATE TABLE IF NOT EXISTS idem_outbox_order_locks (
  namespace VARBINARY(255) NOT NULL,
  order_key VARBINARY(512) NOT NULL,
  PRIMARY KEY (namespace, order_key)
) ENGINE=InnoDB;
