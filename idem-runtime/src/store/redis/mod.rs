//! Redis and Redis Cluster record stores.
