//! How an engine is reached, read as the docker CLI reads it: `DOCKER_HOST` (`unix://PATH` or
//! `tcp://HOST:PORT`, the local socket when unset) and, with `DOCKER_TLS_VERIFY` set, TLS both
//! ways with the files in `DOCKER_CERT_PATH` (`ca.pem`, `cert.pem`, `key.pem`; `~/.docker` when
//! unset). A swarm node's engine is its label's address, over TLS with the node's own directory
//! of those files ([`CERTS_LABEL`]) or the manager's.
//!
//! An engine that answers plain TCP gives whoever reaches it root on its machine, so a plain TCP
//! address that is not loopback is refused unless [`PLAIN_TCP_VAR`] allows it. The TLS files are
//! read and checked before connecting (present, parsed, the key the certificate's, in date), so
//! a bad one is named by its path rather than by a failed handshake.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use bollard::{Docker, API_DEFAULT_VERSION};
use openssl::asn1::Asn1Time;
use openssl::pkey::PKey;
use openssl::x509::X509;

use crate::world::tls::{ENGINE_CA_FILE, ENGINE_CERT_FILE, ENGINE_KEY_FILE};

/// Set to `1`, allows a plain TCP engine address that is not loopback.
pub(crate) const PLAIN_TCP_VAR: &str = "ENGINE_PLAIN_TCP";
/// The node label holding the directory of the TLS files the runner reaches the node's engine
/// with (on the runner's machine), when the node's differ from the manager's.
pub(crate) const CERTS_LABEL: &str = "perf-tests.engine-certs";
/// Seconds any one request to the engine may take (bollard's default).
const REQUEST_TIMEOUT_S: u64 = 120;

/// The TLS files the runner proves itself with, and where that directory was named.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTls {
    pub dir: PathBuf,
    /// Where the directory came from, for errors: `DOCKER_CERT_PATH`, a node's label, ...
    pub named_by: String,
}

/// An engine's address and, for TCP with TLS, the client's files.
#[derive(Debug, Clone, PartialEq)]
pub struct Address {
    pub host: String,
    /// Where the address came from, for errors: `DOCKER_HOST`, a node's label, ...
    pub named_by: String,
    pub tls: Option<ClientTls>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Address {
    /// The engine the environment names.
    pub(crate) fn from_env() -> Address {
        let (host, named_by) = match var("DOCKER_HOST") {
            Some(h) => (h, "DOCKER_HOST".to_string()),
            None => (
                "unix:///var/run/docker.sock".to_string(),
                "the default socket (DOCKER_HOST unset)".to_string(),
            ),
        };
        // The docker CLI takes any non-empty DOCKER_TLS_VERIFY as set.
        let tls = var("DOCKER_TLS_VERIFY").map(|_| match var("DOCKER_CERT_PATH") {
            Some(dir) => ClientTls {
                dir: PathBuf::from(dir),
                named_by: "DOCKER_CERT_PATH".into(),
            },
            None => ClientTls {
                dir: std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".docker"),
                named_by: "~/.docker (DOCKER_CERT_PATH unset)".into(),
            },
        });
        Address {
            host,
            named_by,
            tls,
        }
    }

    /// Swarm node `node`'s engine at `host` (its [`super::ENGINE_LABEL`]): over TLS with the
    /// directory `certs` (its [`CERTS_LABEL`]) when given, else, for a TCP address, with the
    /// manager's files when the manager is reached over TLS.
    pub(crate) fn node(node: &str, host: &str, certs: Option<&str>, manager: &Address) -> Address {
        let named_by = format!("swarm node {node}'s label {}", super::ENGINE_LABEL);
        let tls = match certs {
            Some(dir) => Some(ClientTls {
                dir: PathBuf::from(dir),
                named_by: format!("swarm node {node}'s label {CERTS_LABEL}"),
            }),
            None if host.starts_with("tcp://") => manager.tls.clone(),
            None => None,
        };
        Address {
            host: host.to_string(),
            named_by,
            tls,
        }
    }

    /// The address with how it is reached, for messages: `tcp://10.0.0.5:2376 (TLS, files in
    /// /etc/perf-tests/certs)`.
    pub(crate) fn describe(&self) -> String {
        match &self.tls {
            Some(t) => format!("{} (TLS, files in {})", self.host, t.dir.display()),
            None => self.host.clone(),
        }
    }

    /// A client of the engine, once the address and its TLS files pass the checks. Connects
    /// lazily: the first request reaches the engine.
    pub(crate) fn client(&self) -> Result<Docker> {
        let host = &self.host;
        if host.starts_with("unix://") {
            if let Some(t) = &self.tls {
                bail!(
                    "{}={host} is a local socket, which takes no TLS; unset DOCKER_TLS_VERIFY or \
                     {} ({})",
                    self.named_by,
                    t.named_by,
                    t.dir.display()
                );
            }
            return Docker::connect_with_unix(host, REQUEST_TIMEOUT_S, API_DEFAULT_VERSION)
                .with_context(|| format!("{}={host}", self.named_by));
        }
        let Some(authority) = host.strip_prefix("tcp://") else {
            bail!(
                "{}={host}: expected unix://PATH or tcp://HOST:PORT (the engine's address as \
                 DOCKER_HOST gives it; ssh:// is not supported: forward the engine's socket or \
                 listen on TCP with TLS)",
                self.named_by
            );
        };
        match &self.tls {
            Some(t) => {
                check_files(t)?;
                Docker::connect_with_ssl(
                    host,
                    &t.dir.join(ENGINE_KEY_FILE),
                    &t.dir.join(ENGINE_CERT_FILE),
                    &t.dir.join(ENGINE_CA_FILE),
                    REQUEST_TIMEOUT_S,
                    API_DEFAULT_VERSION,
                )
                .with_context(|| format!("{}={host} with {}", self.named_by, t.named_by))
            }
            None => {
                let allowed = var(PLAIN_TCP_VAR).as_deref() == Some("1");
                if !allowed && !is_loopback(authority) {
                    bail!(
                        "{}={host}: a plain TCP engine address that is not loopback (whoever \
                         reaches it is root on that machine); reach it with TLS as the docker CLI \
                         does (DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH holding {ENGINE_CA_FILE}, \
                         {ENGINE_CERT_FILE} and {ENGINE_KEY_FILE}), or set {PLAIN_TCP_VAR}=1 to \
                         allow it",
                        self.named_by
                    );
                }
                Docker::connect_with_http(host, REQUEST_TIMEOUT_S, API_DEFAULT_VERSION)
                    .with_context(|| format!("{}={host}", self.named_by))
            }
        }
    }

    /// What a failed first request most likely means, with the way out: an engine that speaks
    /// TLS reached without it, or the other way round, or a certificate the other side refused.
    pub(crate) fn explain(&self, error: &str) -> Option<String> {
        let e = error.to_ascii_lowercase();
        match &self.tls {
            None if e.contains("http request to an https server") => Some(format!(
                "the engine at {} speaks TLS: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (or, \
                 for a swarm node, {CERTS_LABEL})",
                self.host
            )),
            Some(t)
                if e.contains("invalidcontenttype")
                    || e.contains("corrupt message")
                    || e.contains("wrong version number") =>
            {
                Some(format!(
                    "the engine at {} does not speak TLS on that port: reach it without TLS \
                     (unset DOCKER_TLS_VERIFY) or at its TLS port; the files were {} ({})",
                    self.host,
                    t.dir.display(),
                    t.named_by
                ))
            }
            Some(t)
                if e.contains("unknownissuer")
                    || e.contains("invalid peer certificate")
                    || e.contains("certificate verify failed") =>
            {
                Some(format!(
                    "the engine at {} presented a certificate {} does not vouch for ({}): the \
                     engine's certificate must be signed by that CA and name the address",
                    self.host,
                    t.dir.join(ENGINE_CA_FILE).display(),
                    t.named_by
                ))
            }
            Some(t)
                if e.contains("certificaterequired")
                    || e.contains("badcertificate")
                    || e.contains("unknownca")
                    || e.contains("unknown ca")
                    || e.contains("certificate required")
                    || e.contains("bad certificate") =>
            {
                Some(format!(
                    "the engine at {} refused the client certificate {} ({}): it must be signed \
                     by the CA the engine trusts (dockerd --tlscacert)",
                    self.host,
                    t.dir.join(ENGINE_CERT_FILE).display(),
                    t.named_by
                ))
            }
            _ => None,
        }
    }
}

/// A TLS handshake with the engine on its own, then a wait for what the engine says next: what
/// fails there, if anything. Under TLS 1.3 the engine refuses a client certificate after the client
/// has finished its half of the handshake, so an HTTP client may see only a closed connection
/// ("connection was not ready"); reading on until the engine's alert arrives names the refusal.
pub(crate) fn handshake_failure(address: &Address) -> Option<String> {
    use openssl::ssl::{SslConnector, SslFiletype, SslMethod};
    use std::io::ErrorKind;
    use std::net::{TcpStream, ToSocketAddrs};
    use std::time::Duration;

    let t = address.tls.as_ref()?;
    let authority = address.host.strip_prefix("tcp://")?;
    let wait = Duration::from_secs(5);
    // The engine's alert follows the client's half of the handshake at once.
    let answer_within = Duration::from_secs(2);
    let attempt = || -> Result<()> {
        let mut builder = SslConnector::builder(SslMethod::tls_client())?;
        builder.set_ca_file(t.dir.join(ENGINE_CA_FILE))?;
        builder.set_certificate_file(t.dir.join(ENGINE_CERT_FILE), SslFiletype::PEM)?;
        builder.set_private_key_file(t.dir.join(ENGINE_KEY_FILE), SslFiletype::PEM)?;
        let at = authority
            .to_socket_addrs()?
            .next()
            .with_context(|| format!("{authority}: no address"))?;
        let tcp = TcpStream::connect_timeout(&at, wait)?;
        tcp.set_read_timeout(Some(answer_within))?;
        tcp.set_write_timeout(Some(wait))?;
        let mut tls = builder.build().connect(host_of(authority), tcp)?;
        // Read, not write: a request the engine left unread when it refused would turn its close
        // into a reset, which can overtake the alert. An engine that accepts says nothing more
        // until asked, so the read waits out its timeout.
        match tls.ssl_read(&mut [0u8; 1]) {
            Err(e)
                if !e.io_error().is_some_and(|io| {
                    matches!(io.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
                }) =>
            {
                Err(e.into())
            }
            _ => Ok(()),
        }
    };
    attempt().err().map(|e| format!("{e:#}"))
}

/// The host of `authority` (`host:port`, `[v6]:port`).
fn host_of(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    }
}

/// Whether `authority` (`host:port`) names this machine.
fn is_loopback(authority: &str) -> bool {
    let host = host_of(authority);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Reads the client's TLS files: each present and parsed, the key the certificate's, the
/// certificate and the CA in date. Each fault names the file and where its directory was named.
fn check_files(t: &ClientTls) -> Result<()> {
    // Every fault reads "<file> (<what named its directory>)...".
    let at = |file: &str| format!("{} ({})", t.dir.join(file).display(), t.named_by);
    let pem = |file: &str| -> Result<Vec<u8>> {
        std::fs::read(t.dir.join(file)).with_context(|| format!("{}: cannot read it", at(file)))
    };
    let cert_at = |file: &str| -> Result<X509> {
        X509::from_pem(&pem(file)?).with_context(|| format!("{}: not a PEM certificate", at(file)))
    };
    let ca = cert_at(ENGINE_CA_FILE)?;
    let cert = cert_at(ENGINE_CERT_FILE)?;
    let key = PKey::private_key_from_pem(&pem(ENGINE_KEY_FILE)?)
        .with_context(|| format!("{}: not a PEM private key", at(ENGINE_KEY_FILE)))?;
    if !cert.public_key()?.public_eq(&key) {
        bail!(
            "{} is not the key of {}",
            at(ENGINE_KEY_FILE),
            t.dir.join(ENGINE_CERT_FILE).display()
        );
    }
    let now = Asn1Time::days_from_now(0)?;
    for (file, c) in [(ENGINE_CA_FILE, &ca), (ENGINE_CERT_FILE, &cert)] {
        if c.not_after() < now {
            bail!("{} expired on {}", at(file), c.not_after());
        }
        if c.not_before() > now {
            bail!("{} is valid only from {}", at(file), c.not_before());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::tls::{write_engine_dir, Ca, Usage};
    use std::path::Path;

    /// An address from `DOCKER_HOST` with no TLS.
    fn plain(host: &str) -> Address {
        Address {
            host: host.to_string(),
            named_by: "DOCKER_HOST".into(),
            tls: None,
        }
    }

    fn with_tls(dir: &Path) -> Address {
        Address {
            host: "tcp://10.0.0.5:2376".into(),
            named_by: "DOCKER_HOST".into(),
            tls: Some(ClientTls {
                dir: dir.to_path_buf(),
                named_by: "DOCKER_CERT_PATH".into(),
            }),
        }
    }

    #[test]
    fn loopback_is_told_from_the_network() {
        for yes in [
            "127.0.0.1:2375",
            "localhost:2375",
            "[::1]:2375",
            "127.1.2.3:1",
        ] {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in [
            "10.0.0.5:2375",
            "[fe80::1]:2375",
            "example.com:2375",
            "0.0.0.0:2375",
        ] {
            assert!(!is_loopback(no), "{no}");
        }
    }

    #[test]
    fn a_plain_tcp_address_off_this_machine_is_refused_naming_the_way_out() {
        let err = format!("{:#}", plain("tcp://10.0.0.5:2375").client().unwrap_err());
        assert!(err.contains("DOCKER_HOST=tcp://10.0.0.5:2375"), "{err}");
        assert!(err.contains("DOCKER_TLS_VERIFY=1"), "{err}");
        assert!(err.contains(PLAIN_TCP_VAR), "{err}");
        assert!(plain("tcp://127.0.0.1:2375").client().is_ok());
    }

    #[test]
    fn other_schemes_and_tls_on_a_socket_are_refused() {
        let err = format!("{:#}", plain("ssh://me@host").client().unwrap_err());
        assert!(err.contains("ssh:// is not supported"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let mut a = with_tls(dir.path());
        a.host = "unix:///var/run/docker.sock".into();
        let err = format!("{:#}", a.client().unwrap_err());
        assert!(err.contains("takes no TLS"), "{err}");
    }

    #[test]
    fn each_bad_tls_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::new("test CA", 1).unwrap();
        write_engine_dir(dir.path(), &ca, Usage::Client, "client", &[], &[]).unwrap();
        with_tls(dir.path()).client().unwrap();

        // Another certificate's key.
        let other = tempfile::tempdir().unwrap();
        write_engine_dir(other.path(), &ca, Usage::Client, "other", &[], &[]).unwrap();
        std::fs::copy(
            other.path().join(ENGINE_KEY_FILE),
            dir.path().join(ENGINE_KEY_FILE),
        )
        .unwrap();
        let err = format!("{:#}", with_tls(dir.path()).client().unwrap_err());
        assert!(
            err.contains(&format!(
                "{} (DOCKER_CERT_PATH) is not the key of",
                dir.path().join(ENGINE_KEY_FILE).display()
            )),
            "{err}"
        );

        // A missing file.
        std::fs::remove_file(dir.path().join(ENGINE_KEY_FILE)).unwrap();
        let err = format!("{:#}", with_tls(dir.path()).client().unwrap_err());
        assert!(
            err.contains(&dir.path().join(ENGINE_KEY_FILE).display().to_string())
                && err.contains("cannot read it"),
            "{err}"
        );

        // Not a certificate.
        std::fs::write(dir.path().join(ENGINE_CA_FILE), "not pem").unwrap();
        let err = format!("{:#}", with_tls(dir.path()).client().unwrap_err());
        assert!(
            err.contains("ca.pem (DOCKER_CERT_PATH): not a PEM certificate"),
            "{err}"
        );
    }

    #[test]
    fn an_expired_certificate_is_named_with_its_date() {
        use openssl::hash::MessageDigest;
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::new("test CA", 1).unwrap();
        write_engine_dir(dir.path(), &ca, Usage::Client, "client", &[], &[]).unwrap();
        // The client's own key, in a certificate that ended in 1970.
        let key =
            PKey::private_key_from_pem(&std::fs::read(dir.path().join(ENGINE_KEY_FILE)).unwrap())
                .unwrap();
        let mut cert = X509::builder().unwrap();
        cert.set_version(2).unwrap();
        cert.set_pubkey(&key).unwrap();
        cert.set_not_before(&Asn1Time::from_unix(0).unwrap())
            .unwrap();
        cert.set_not_after(&Asn1Time::from_unix(86_400).unwrap())
            .unwrap();
        cert.sign(&key, MessageDigest::sha256()).unwrap();
        std::fs::write(
            dir.path().join(ENGINE_CERT_FILE),
            cert.build().to_pem().unwrap(),
        )
        .unwrap();
        let err = format!("{:#}", with_tls(dir.path()).client().unwrap_err());
        assert!(
            err.contains("cert.pem (DOCKER_CERT_PATH) expired on Jan  2 00:00:00 1970"),
            "{err}"
        );
    }

    /// What connecting to `address` fails with, the whole chain.
    async fn connect_error(address: &Address) -> String {
        format!(
            "{:#}",
            super::super::Engine::connect_to(address, "test")
                .await
                .unwrap_err()
        )
    }

    #[tokio::test]
    async fn tls_to_an_engine_that_speaks_none_says_so() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Plain HTTP, as an engine without TLS answers a TLS greeting.
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4) {
                let mut stream = stream.unwrap();
                let mut buf = [0u8; 512];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::new("test CA", 1).unwrap();
        write_engine_dir(dir.path(), &ca, Usage::Client, "client", &[], &[]).unwrap();
        let mut address = with_tls(dir.path());
        address.host = format!("tcp://127.0.0.1:{port}");
        let err = connect_error(&address).await;
        assert!(
            err.contains(&format!(
                "the engine at tcp://127.0.0.1:{port} does not speak TLS on that port"
            )),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_refused_client_certificate_is_named_however_the_first_request_ends() {
        use openssl::ssl::{SslAcceptor, SslFiletype, SslMethod, SslVerifyMode};
        // An engine trusting its own CA's clients, and a client whose certificate another CA
        // signed: the engine's alert comes after the client's half of the handshake.
        let server_dir = tempfile::tempdir().unwrap();
        let engine_ca = Ca::new("engine CA", 1).unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        write_engine_dir(
            server_dir.path(),
            &engine_ca,
            Usage::Server,
            "engine",
            &[],
            &[ip],
        )
        .unwrap();
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
        let at = |f: &str| server_dir.path().join(f);
        acceptor.set_ca_file(at(ENGINE_CA_FILE)).unwrap();
        acceptor
            .set_certificate_file(at(ENGINE_CERT_FILE), SslFiletype::PEM)
            .unwrap();
        acceptor
            .set_private_key_file(at(ENGINE_KEY_FILE), SslFiletype::PEM)
            .unwrap();
        acceptor.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        let acceptor = acceptor.build();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let _ = acceptor.accept(stream.unwrap());
            }
        });
        let client_dir = tempfile::tempdir().unwrap();
        let other_ca = Ca::new("another CA", 1).unwrap();
        write_engine_dir(client_dir.path(), &other_ca, Usage::Client, "c", &[], &[]).unwrap();
        std::fs::copy(at(ENGINE_CA_FILE), client_dir.path().join(ENGINE_CA_FILE)).unwrap();
        let mut address = with_tls(client_dir.path());
        address.host = format!("tcp://127.0.0.1:{port}");

        let alone = handshake_failure(&address).expect("the engine refuses the certificate");
        let said = address.explain(&alone).unwrap_or_default();
        assert!(said.contains("refused the client certificate"), "{alone}");
        let err = connect_error(&address).await;
        assert!(
            err.contains(&format!(
                "refused the client certificate {}",
                client_dir.path().join(ENGINE_CERT_FILE).display()
            )),
            "{err}"
        );
    }

    #[test]
    fn what_a_failed_first_request_means_is_said_with_the_file() {
        // As rustls and dockerd word them.
        let tls = with_tls(Path::new("/c"));
        let refused = tls
            .explain("connection error: received fatal alert: BadCertificate")
            .unwrap();
        assert!(
            refused.contains("refused the client certificate /c/cert.pem (DOCKER_CERT_PATH)"),
            "{refused}"
        );
        let unknown = tls
            .explain("invalid peer certificate: UnknownIssuer")
            .unwrap();
        assert!(
            unknown.contains("/c/ca.pem does not vouch for"),
            "{unknown}"
        );
        let plain = plain("tcp://127.0.0.1:2376");
        let said = plain
            .explain("Client sent an HTTP request to an HTTPS server.")
            .unwrap();
        assert!(said.contains("speaks TLS"), "{said}");
        assert_eq!(plain.explain("connection refused"), None);
    }

    #[test]
    fn a_node_takes_its_own_files_or_the_managers_for_tcp() {
        let manager = with_tls(Path::new("/m"));
        let own = Address::node("n2", "tcp://10.0.0.6:2376", Some("/n2"), &manager);
        assert_eq!(own.tls.as_ref().unwrap().dir, Path::new("/n2"));
        assert!(own.tls.unwrap().named_by.contains(CERTS_LABEL));
        let shared = Address::node("n3", "tcp://10.0.0.7:2376", None, &manager);
        assert_eq!(shared.tls.unwrap().dir, Path::new("/m"));
        let socket = Address::node("n4", "unix:///run/n4.sock", None, &manager);
        assert_eq!(socket.tls, None);
        assert!(socket.named_by.contains("swarm node n4"));
    }
}
