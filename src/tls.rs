//! Per-run TLS material: a throwaway CA and a server certificate for the scenario's host names.
//!
//! Nothing is committed to the repository: every run that needs TLS makes a fresh CA, so no
//! private key ever outlives the run directory it was written to.

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
pub const CA_FILE: &str = "ca.pem";
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

/// Generates a CA and a server certificate valid for `hosts` into `dir` (created if missing).
pub fn generate(dir: &Path, hosts: &[String]) -> Result<TlsFiles> {
    anyhow::ensure!(!hosts.is_empty(), "tls: at least one host name is needed");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;

    let ca_key = new_key()?;
    let mut ca = X509::builder()?;
    ca.set_version(2)?;
    let ca_serial = serial()?;
    ca.set_serial_number(&ca_serial)?;
    let ca_name = name("perf-tests run CA")?;
    ca.set_subject_name(&ca_name)?;
    ca.set_issuer_name(&ca_name)?;
    ca.set_pubkey(&ca_key)?;
    ca.set_not_before(&*Asn1Time::days_from_now(0)?)?;
    ca.set_not_after(&*Asn1Time::days_from_now(2)?)?;
    ca.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    ca.append_extension(
        KeyUsage::new()
            .critical()
            .key_cert_sign()
            .crl_sign()
            .build()?,
    )?;
    ca.sign(&ca_key, MessageDigest::sha256())?;
    let ca = ca.build();

    let key = new_key()?;
    let mut cert = X509::builder()?;
    cert.set_version(2)?;
    let cert_serial = serial()?;
    cert.set_serial_number(&cert_serial)?;
    let subject = name(&hosts[0])?;
    cert.set_subject_name(&subject)?;
    cert.set_issuer_name(ca.subject_name())?;
    cert.set_pubkey(&key)?;
    cert.set_not_before(&*Asn1Time::days_from_now(0)?)?;
    cert.set_not_after(&*Asn1Time::days_from_now(2)?)?;
    cert.append_extension(BasicConstraints::new().build()?)?;
    cert.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .key_agreement()
            .build()?,
    )?;
    cert.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
    let mut san = SubjectAlternativeName::new();
    for h in hosts {
        san.dns(h);
    }
    let san = san.build(&cert.x509v3_context(Some(&ca), None))?;
    cert.append_extension(san)?;
    cert.sign(&ca_key, MessageDigest::sha256())?;
    let cert = cert.build();

    let ca_pem = ca.to_pem()?;
    let cert_pem = cert.to_pem()?;
    let key_pem = key.private_key_to_pem_pkcs8()?;
    let write = |file: &str, bytes: &[u8]| -> Result<PathBuf> {
        let p = dir.join(file);
        std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
        Ok(p)
    };
    let ca_path = write(CA_FILE, &ca_pem)?;
    let server_cert = write(SERVER_CERT_FILE, &cert_pem)?;
    let server_key = write(SERVER_KEY_FILE, &key_pem)?;
    Ok(TlsFiles {
        dir: dir.to_path_buf(),
        ca: ca_path,
        server_cert,
        server_key,
    })
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
