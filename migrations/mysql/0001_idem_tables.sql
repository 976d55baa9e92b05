CREATE TABLE IF NOT EXISTS idem_records (
  idem_key VARBINARY(768) NOT NULL PRIMARY KEY,
  state SMALLINT NOT NULL,
  owner BINARY(16) NOT NULL,
  fence BIGINT NOT NULL,
  fingerprint BINARY(16) NOT NULL,
  payload LONGBLOB,
  expires_at DATETIME(6) NOT NULL,
  KEY idem_records_expires_idx (expires_at)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS idem_fences (
  slot SMALLINT NOT NULL PRIMARY KEY,
  v BIGINT NOT NULL
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS idem_tokens (
  token_key VARBINARY(768) NOT NULL PRIMARY KEY,
  owner BINARY(16) NULL,
  fence BIGINT NOT NULL,
  lease_until DATETIME(6) NULL,
  expires_at DATETIME(6) NOT NULL,
  KEY idem_tokens_expires_idx (expires_at)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS idem_consume_log (
  msg_key VARBINARY(768) NOT NULL PRIMARY KEY,
  biz_key VARBINARY(768) NULL,
  consumed_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  UNIQUE KEY idem_consume_log_biz_uk (biz_key),
  KEY idem_consume_log_expires_idx (expires_at)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS idem_outbox (
  seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARBINARY(64) NOT NULL,
  topic VARBINARY(255) NOT NULL,
  business_id VARBINARY(512) NOT NULL,
  order_key VARBINARY(512) NULL,
  payload LONGBLOB NOT NULL,
  state SMALLINT NOT NULL,
  attempts BIGINT NOT NULL,
  owner BINARY(16) NULL,
  due_at DATETIME(6) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  sent_at DATETIME(6) NULL,
  expires_at DATETIME(6) NULL,
  last_error TEXT NULL,
  UNIQUE KEY idem_outbox_id_uk (id),
  UNIQUE KEY idem_outbox_biz_uk (topic, business_id),
  KEY idem_outbox_due_idx (state, seq),
  KEY idem_outbox_order_idx (order_key, seq),
  KEY idem_outbox_expires_idx (expires_at)
) ENGINE=InnoDB;
