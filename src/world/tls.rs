//! Per-run TLS material: a throwaway CA and a server certificate for the scenario's host names.
//!
//! Nothing is committed to the repository: every run that needs TLS makes a fresh CA, so no
//! private key ever outlives the run directory it was written to.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509NameBuilder, X509};

/// File names inside a generated TLS directory: the CA's certificate (what clients trust), the
/// server's certificate and its private key (PKCS#8), all PEM.
pub(crate) const CA_FILE: &str = "ca.pem";
pub const SERVER_CERT_FILE: &str = "server.crt";
pub const SERVER_KEY_FILE: &str = "server.key";

/// Paths of the generated material.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
}

fn new_key() -> Result<PKey<Private>> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    Ok(PKey::from_ec_key(EcKey::generate(&group)?)?)
}

fn serial() -> Result<openssl::asn1::Asn1Integer> {
    let mut bn = BigNum::new()?;
    bn.rand(127, MsbOption::MAYBE_ZERO, false)?;
    Ok(bn.to_asn1_integer()?)
}

fn name(cn: &str) -> Result<openssl::x509::X509Name> {
    let mut b = X509NameBuilder::new()?;
    b.append_entry_by_nid(Nid::ORGANIZATIONNAME, "perf-tests")?;
    b.append_entry_by_nid(Nid::COMMONNAME, cn)?;
    Ok(b.build())
}

/// What a certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// A server (a proxy's gateway, a node's engine).
    Server,
    /// A client proving who it is to a server that asks (the runner to an engine).
    Client,
}

/// A throwaway certificate authority; its key lives only in memory, so nothing outside can sign
/// with it once the certificates are made.
pub struct Ca {
    cert: X509,
    key: PKey<Private>,
    days: u32,
}

impl Ca {
    /// A CA named `cn` whose certificates are valid from now for `days`.
    pub fn new(cn: &str, days: u32) -> Result<Ca> {
        let key = new_key()?;
        let mut ca = X509::builder()?;
        ca.set_version(2)?;
        ca.set_serial_number(&*serial()?)?;
        let ca_name = name(cn)?;
        ca.set_subject_name(&ca_name)?;
        ca.set_issuer_name(&ca_name)?;
        ca.set_pubkey(&key)?;
        ca.set_not_before(&*Asn1Time::days_from_now(0)?)?;
        ca.set_not_after(&*Asn1Time::days_from_now(days)?)?;
        ca.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        ca.append_extension(
            KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .build()?,
        )?;
        ca.sign(&key, MessageDigest::sha256())?;
        Ok(Ca {
            cert: ca.build(),
            key,
            days,
        })
    }

    /// The CA's certificate, PEM.
    pub(crate) fn pem(&self) -> Result<Vec<u8>> {
        Ok(self.cert.to_pem()?)
    }

    /// A certificate for `usage` named `cn`, valid for the host names `dns` and the addresses
    /// `ips` (a client certificate needs neither), with its new key: both PEM (the key PKCS#8).
    pub(crate) fn issue(
        &self,
        usage: Usage,
        cn: &str,
        dns: &[String],
        ips: &[IpAddr],
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        let key = new_key()?;
        let mut cert = X509::builder()?;
        cert.set_version(2)?;
        cert.set_serial_number(&*serial()?)?;
        cert.set_subject_name(&*name(cn)?)?;
        cert.set_issuer_name(self.cert.subject_name())?;
        cert.set_pubkey(&key)?;
        cert.set_not_before(&*Asn1Time::days_from_now(0)?)?;
        cert.set_not_after(&*Asn1Time::days_from_now(self.days)?)?;
        cert.append_extension(BasicConstraints::new().build()?)?;
        cert.append_extension(
            KeyUsage::new()
                .critical()
                .digital_signature()
                .key_agreement()
                .build()?,
        )?;
        let mut eku = ExtendedKeyUsage::new();
        match usage {
            Usage::Server => eku.server_auth(),
            Usage::Client => eku.client_auth(),
        };
        cert.append_extension(eku.build()?)?;
        if !dns.is_empty() || !ips.is_empty() {
            let mut san = SubjectAlternativeName::new();
            for h in dns {
                san.dns(h);
            }
            for ip in ips {
                san.ip(&ip.to_string());
            }
            let san = san.build(&cert.x509v3_context(Some(&self.cert), None))?;
            cert.append_extension(san)?;
        }
        cert.sign(&self.key, MessageDigest::sha256())?;
        Ok((cert.build().to_pem()?, key.private_key_to_pem_pkcs8()?))
    }
}

/// Writes `bytes` to `dir/file` with permissions `mode` and returns its path.
fn write(dir: &Path, file: &str, bytes: &[u8], mode: u32) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join(file);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&p)
        .with_context(|| format!("writing {}", p.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

/// Generates a CA and a server certificate valid for `hosts` into `dir` (created if missing).
pub fn generate(dir: &Path, hosts: &[String]) -> Result<TlsFiles> {
    anyhow::ensure!(!hosts.is_empty(), "tls: at least one host name is needed");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca = Ca::new("perf-tests run CA", 2)?;
    let (cert, key) = ca.issue(Usage::Server, &hosts[0], hosts, &[])?;
    Ok(TlsFiles {
        dir: dir.to_path_buf(),
        ca: write(dir, CA_FILE, &ca.pem()?, 0o644)?,
        server_cert: write(dir, SERVER_CERT_FILE, &cert, 0o644)?,
        // Readable: the proxy's container reads it under its own user; it dies with the run.
        server_key: write(dir, SERVER_KEY_FILE, &key, 0o644)?,
    })
}

/// File names of an engine's TLS directory, as the docker CLI reads them from
/// `DOCKER_CERT_PATH` (and `dockerd` is given them for its own side): the CA's certificate, the
/// certificate and its key.
pub(crate) const ENGINE_CA_FILE: &str = "ca.pem";
pub(crate) const ENGINE_CERT_FILE: &str = "cert.pem";
pub(crate) const ENGINE_KEY_FILE: &str = "key.pem";

/// Writes an engine TLS directory into `dir` (created if missing): `ca`'s certificate, and a
/// certificate for `usage` with its key.
pub fn write_engine_dir(
    dir: &Path,
    ca: &Ca,
    usage: Usage,
    cn: &str,
    dns: &[String],
    ips: &[IpAddr],
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (cert, key) = ca.issue(usage, cn, dns, ips)?;
    write(dir, ENGINE_CA_FILE, &ca.pem()?, 0o644)?;
    write(dir, ENGINE_CERT_FILE, &cert, 0o644)?;
    // The owner's only: it opens an engine to whoever holds it.
    write(dir, ENGINE_KEY_FILE, &key, 0o600)?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::stack::Stack;
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::X509StoreContext;

    #[test]
    fn server_certificate_verifies_against_generated_ca() {
        let dir = tempfile::tempdir().unwrap();
        let files = generate(dir.path(), &["kroxylicious".into(), "localhost".into()]).unwrap();
        let ca = X509::from_pem(&std::fs::read(&files.ca).unwrap()).unwrap();
        let cert = X509::from_pem(&std::fs::read(&files.server_cert).unwrap()).unwrap();
        let key = PKey::private_key_from_pem(&std::fs::read(&files.server_key).unwrap()).unwrap();
        assert!(
            cert.public_key().unwrap().public_eq(&key),
            "the key is the certificate's"
        );

        let mut store = X509StoreBuilder::new().unwrap();
        store.add_cert(ca).unwrap();
        let store = store.build();
        let mut ctx = X509StoreContext::new().unwrap();
        let chain = Stack::new().unwrap();
        let ok = ctx
            .init(&store, &cert, &chain, |c| c.verify_cert())
            .unwrap();
        assert!(ok, "server certificate must chain to the CA");
        let sans: Vec<String> = cert
            .subject_alt_names()
            .unwrap()
            .iter()
            .filter_map(|n| n.dnsname().map(str::to_string))
            .collect();
        assert_eq!(sans, vec!["kroxylicious", "localhost"]);
    }

    #[test]
    fn every_run_gets_a_fresh_ca() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        generate(a.path(), &["x".into()]).unwrap();
        generate(b.path(), &["x".into()]).unwrap();
        assert_ne!(
            std::fs::read(a.path().join(CA_FILE)).unwrap(),
            std::fs::read(b.path().join(CA_FILE)).unwrap()
        );
    }
}
