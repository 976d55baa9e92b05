CREATE TABLE IF NOT EXISTS idem_records (
  idem_key TEXT NOT NULL PRIMARY KEY,
  state INTEGER NOT NULL,
  owner BLOB NOT NULL,
  fence INTEGER NOT NULL,
  fingerprint BLOB NOT NULL,
  payload BLOB,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idem_records_expires_idx ON idem_records (expires_at);
CREATE TABLE IF NOT EXISTS idem_fences (
  slot INTEGER NOT NULL PRIMARY KEY,
  v INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idem_tokens (
  token_key TEXT NOT NULL PRIMARY KEY,
  owner BLOB,
  fence INTEGER NOT NULL,
  lease_until INTEGER,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idem_tokens_expires_idx ON idem_tokens (expires_at);
CREATE TABLE IF NOT EXISTS idem_consume_log (
  msg_key TEXT NOT NULL PRIMARY KEY,
  biz_key TEXT,
  consumed_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS idem_consume_log_biz_uk ON idem_consume_log (biz_key);
CREATE INDEX IF NOT EXISTS idem_consume_log_expires_idx ON idem_consume_log (expires_at);
CREATE TABLE IF NOT EXISTS idem_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  topic TEXT NOT NULL,
  business_id TEXT NOT NULL,
  order_key TEXT,
  payload BLOB NOT NULL,
  state SMALLINT NOT NULL,
  attempts BIGINT NOT NULL,
  owner BLOB,
  due_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  sent_at INTEGER,
  expires_at INTEGER,
  last_error TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS idem_outbox_id_uk ON idem_outbox (id);
CREATE UNIQUE INDEX IF NOT EXISTS idem_outbox_biz_uk ON idem_outbox (topic, business_id);
CREATE INDEX IF NOT EXISTS idem_outbox_due_idx ON idem_outbox (state, seq);
CREATE INDEX IF NOT EXISTS idem_outbox_order_idx ON idem_outbox (order_key, seq);
CREATE INDEX IF NOT EXISTS idem_outbox_expires_idx ON idem_outbox (expires_at);
