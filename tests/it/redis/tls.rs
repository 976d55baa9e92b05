//! `rediss://`: a test-owned `redis-server` with a TLS port and a certificate
//! generated for the test (openssl), reached through rustls (feature
//! `redis-tls`). A client built with the test CA connects and guards calls; the
//! plain URL, whose system roots do not know the CA, fails as a typed error.

use std::path::{Path, PathBuf};
use std::process::Command;

use idem::store::redis::RedisStore;
use idem::{How, Idem};

use crate::support::redis_server::RedisServer;
use crate::support::{AppError, Counter, unique_ns};

/// A CA and a server certificate for 127.0.0.1 signed by it, in a fresh
/// directory removed on drop.
struct Certs(PathBuf);

impl Certs {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("idem-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let ossl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl must be installed for the TLS test");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        ossl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=idem test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ]);
        ossl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        ossl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.crt",
        ]);
        Certs(dir)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).display().to_string()
    }
    fn dir(&self) -> &Path {
        &self.0
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spare_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_connects_with_the_test_ca_and_guards_calls() {
    let certs = Certs::new();
    let tls_port = spare_port().to_string();
    let server = RedisServer::start_with(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &certs.path("server.crt"),
        "--tls-key-file",
        &certs.path("server.key"),
        "--tls-ca-cert-file",
        &certs.path("ca.crt"),
        "--tls-auth-clients",
        "no",
    ]);
    let url = format!("rediss://127.0.0.1:{tls_port}");

    // The system roots do not know the test CA: a typed error, not a panic.
    let e = RedisStore::connect(&url)
        .await
        .expect_err("unknown CA must be refused");
    assert!(
        matches!(e, idem::store::StoreError::Unavailable(_)),
        "{e:?}"
    );

    // A client trusting the test CA: calls are guarded over TLS.
    let ca = std::fs::read(certs.dir().join("ca.crt")).unwrap();
    let client = idem::redis::Client::build_with_tls(
        url.as_str(),
        idem::redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca),
        },
    )
    .unwrap();
    let store = RedisStore::from_client(client, "tls:")
        .await
        .expect("TLS connection");
    let idem = Idem::builder()
        .store(store.clone())
        .namespace(unique_ns("tls"))
        .build()
        .unwrap();
    let runs = Counter::default();
    for want in [How::Executed, How::Replayed] {
        let r = runs.clone();
        let out = idem
            .guard("order", &[&"t-1"])
            .run(|| async move { Ok::<_, AppError>(r.hit()) })
            .await
            .unwrap();
        assert_eq!((out.how(), *out.value()), (want, 1));
    }
    assert_eq!(runs.get(), 1);
    // The record is in the TLS server, under the prefix.
    let keys = server.cli(&["--scan", "--pattern", "tls:*"]);
    assert_eq!(keys.lines().filter(|l| !l.is_empty()).count(), 1, "{keys}");

    // The same through a ConnectionManager the application already holds.
    let shared = RedisStore::from_connection_manager(store.connection(), "tls2:")
        .await
        .unwrap();
    assert!(
        Idem::builder()
            .store(shared)
            .build()
            .unwrap()
            .verify(&[])
            .await
            .is_ok()
    );
}
