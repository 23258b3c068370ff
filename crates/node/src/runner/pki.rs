//! The run's TLS PKI for the DRKey service: `aviary run` plays each ISD's certificate
//! authority. Per ISD a self-signed root (P-256, ECDSA-SHA256); per AS a certificate for its
//! control service, signed by its ISD's root and naming the AS ([`cs_name`]).
//!
//! ```text
//! pki/isd-<n>-root.pem           the root certificate of ISD n (every control service trusts it)
//! pki/isd-<n>-root.key           its private key (PKCS#8 PEM, 0600), the CA's secret
//! <isd-as>/cs-tls.pem            the control service's certificate
//! <isd-as>/cs-tls.key            its private key (PKCS#8 PEM, 0600)
//! ```
//! A rerun in the same directory keeps the roots (and so every peer's trust) and issues
//! fresh AS certificates. These roots are separate from the market's ISD root keys
//! (`market/isd-<n>-root.key`, which certify AS keys for the ledger's P256VERIFY).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aviary_scion::IsdAsn;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use thiserror::Error;
use time::OffsetDateTime;

use crate::control::tls::cs_name;
use crate::files;

/// Lifetime of an ISD root.
pub const ROOT_VALIDITY: Duration = Duration::from_secs(10 * 365 * 86400);
/// Lifetime of a control service's certificate.
pub const CS_VALIDITY: Duration = Duration::from_secs(365 * 86400);

#[derive(Debug, Error)]
pub enum PkiError {
    #[error("{}: {msg}", path.display())]
    File { path: PathBuf, msg: String },
    #[error("certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
}

fn file_err(path: &Path, e: impl std::fmt::Display) -> PkiError {
    PkiError::File { path: path.to_path_buf(), msg: e.to_string() }
}

/// Writes a private key file (mode 0600).
fn write_private(path: &Path, text: &str) -> Result<(), PkiError> {
    files::write_secret(path, text.as_bytes()).map_err(|e| file_err(path, e))
}

fn write_public(path: &Path, text: &str) -> Result<(), PkiError> {
    fs::write(path, text).map_err(|e| file_err(path, e))
}

/// The certificate authority of one ISD.
pub struct IsdRoot {
    pub isd: u16,
    pub cert_file: PathBuf,
    key: KeyPair,
    /// An issuer built from the root's name and key (the stored certificate has the same
    /// name and key, so what it signs chains to the stored one).
    issuer: Certificate,
}

fn root_params(isd: u16) -> Result<CertificateParams, PkiError> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::OrganizationName, "aviary");
    p.distinguished_name.push(DnType::CommonName, format!("ISD {isd} root"));
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ok(p)
}

impl IsdRoot {
    /// A new root whose certificate is valid over `[not_before, not_after]`; nothing is
    /// written (tests use this for roots nobody trusts).
    pub fn generate(
        isd: u16,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<(Self, String), PkiError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut p = root_params(isd)?;
        p.not_before = not_before;
        p.not_after = not_after;
        let issuer = p.self_signed(&key)?;
        let pem = issuer.pem();
        Ok((Self { isd, cert_file: PathBuf::new(), key, issuer }, pem))
    }

    /// The root of ISD `isd` in `pki_dir`: loaded if both files are there, else created.
    pub fn load_or_create(pki_dir: &Path, isd: u16) -> Result<Self, PkiError> {
        fs::create_dir_all(pki_dir).map_err(|e| file_err(pki_dir, e))?;
        let cert_file = pki_dir.join(format!("isd-{isd}-root.pem"));
        let key_file = pki_dir.join(format!("isd-{isd}-root.key"));
        if cert_file.exists() && key_file.exists() {
            let pem = fs::read_to_string(&key_file).map_err(|e| file_err(&key_file, e))?;
            files::restrict(&key_file).map_err(|e| file_err(&key_file, e))?;
            let key = KeyPair::from_pem(&pem).map_err(|e| file_err(&key_file, e))?;
            let issuer = root_params(isd)?.self_signed(&key)?;
            return Ok(Self { isd, cert_file, key, issuer });
        }
        let now = OffsetDateTime::now_utc();
        let (mut root, pem) = Self::generate(isd, now - Duration::from_secs(3600), now + ROOT_VALIDITY)?;
        write_private(&key_file, &root.key.serialize_pem())?;
        write_public(&cert_file, &pem)?;
        root.cert_file = cert_file;
        Ok(root)
    }

    /// A certificate for the control service of `ia`, valid over `[not_before, not_after]`:
    /// `(certificate PEM, private key PEM)`.
    pub fn issue(
        &self,
        ia: IsdAsn,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<(String, String), PkiError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let cert = cs_params(ia, not_before, not_after)?.signed_by(&key, &self.issuer, &self.key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Issues the control service certificate of `ia` into `as_dir` (`cs-tls.pem`,
    /// `cs-tls.key`), valid from an hour ago for [`CS_VALIDITY`].
    pub fn issue_into(&self, ia: IsdAsn, as_dir: &Path) -> Result<(), PkiError> {
        let now = OffsetDateTime::now_utc();
        let (cert, key) = self.issue(ia, now - Duration::from_secs(3600), now + CS_VALIDITY)?;
        write_private(&as_dir.join(CS_KEY_FILE), &key)?;
        write_public(&as_dir.join(CS_CERT_FILE), &cert)
    }
}

/// File names of a control service's TLS identity in its AS directory.
pub const CS_CERT_FILE: &str = "cs-tls.pem";
pub const CS_KEY_FILE: &str = "cs-tls.key";

fn cs_params(ia: IsdAsn, not_before: OffsetDateTime, not_after: OffsetDateTime) -> Result<CertificateParams, PkiError> {
    let mut p = CertificateParams::new(vec![cs_name(ia)])?;
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::OrganizationName, "aviary");
    p.distinguished_name.push(DnType::CommonName, format!("control service {ia}"));
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    p.not_before = not_before;
    p.not_after = not_after;
    Ok(p)
}

/// A self-signed certificate naming `ia` (for tests: one that no root vouches for).
pub fn self_signed(ia: IsdAsn) -> Result<(String, String), PkiError> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let now = OffsetDateTime::now_utc();
    let cert = cs_params(ia, now - Duration::from_secs(3600), now + CS_VALIDITY)?.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}
