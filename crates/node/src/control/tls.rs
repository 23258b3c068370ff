//! TLS between control services for the DRKey Level-1 exchange (rustls with the `ring`
//! provider), mutually authenticated with per-AS certificates under per-ISD roots.
//!
//! Naming: the certificate of the control service of AS `I-A` carries the DNS name
//! [`cs_name`]`(I-A)` = `I-A.cs.scion.invalid` with every `:` of the AS number written `-`
//! (`1-ff00:0:110` becomes `1-ff00-0-110.cs.scion.invalid`; a decimal AS `1-64512` becomes
//! `1-64512.cs.scion.invalid`). The `.invalid` top-level domain (RFC 2606) can never be a
//! real DNS name. Certificates carry both extended key usages, serverAuth and clientAuth: a
//! control service is the server of its own Level-1 keys and the client of everyone else's.
//!
//! Trust: the handshake accepts a peer whose chain ends in any configured ISD root (the
//! client must present one). A Level-1 request then names the subject AS, and
//! [`DrkeyTls::check_subject`] re-verifies the client's certificate against the root of
//! *that AS's ISD only* and for that AS's name, so ISD 2's root cannot vouch for an AS of
//! ISD 1. A client, in turn, trusts for a peer only the root of the peer's ISD and checks
//! the peer's name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aviary_scion::IsdAsn;
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use thiserror::Error;

/// The DNS suffix of control-service names.
pub const NAME_SUFFIX: &str = "cs.scion.invalid";

/// The DNS name in the certificate of AS `ia`'s control service.
pub fn cs_name(ia: IsdAsn) -> String {
    format!("{}.{NAME_SUFFIX}", ia.to_string().replace(':', "-"))
}

#[derive(Debug, Error)]
pub enum TlsError {
    #[error("{}: {msg}", path.display())]
    File { path: PathBuf, msg: String },
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("trust roots: {0}")]
    Verifier(String),
    #[error("no trust root for ISD {0}")]
    NoRoot(u16),
}

fn file_err(path: &Path, msg: impl std::fmt::Display) -> TlsError {
    TlsError::File { path: path.to_path_buf(), msg: msg.to_string() }
}

/// The certificates of a PEM file, in order.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, e))?;
    if certs.is_empty() {
        return Err(file_err(path, "holds no certificate"));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, SEC1 or PKCS#1).
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_err(path, e))
}

/// The crypto provider of every TLS connection here.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A control service's TLS: its server config, a client config per ISD, and a verifier per
/// ISD for checking which AS a client is.
pub struct DrkeyTls {
    server: Arc<ServerConfig>,
    clients: BTreeMap<u16, Arc<ClientConfig>>,
    verifiers: BTreeMap<u16, Arc<WebPkiServerVerifier>>,
}

impl DrkeyTls {
    /// From the files of a `[drkey]` table: own certificate chain and key, and the ISD
    /// roots as `(isd, PEM file)`.
    pub fn load(cert_file: &Path, key_file: &Path, roots: &[(u16, PathBuf)]) -> Result<Self, TlsError> {
        let chain = load_certs(cert_file)?;
        let key = load_key(key_file)?;
        let provider = provider();
        let mut all = RootCertStore::empty();
        let mut clients = BTreeMap::new();
        let mut verifiers = BTreeMap::new();
        for (isd, path) in roots {
            let mut store = RootCertStore::empty();
            for c in load_certs(path)? {
                store.add(c.clone()).map_err(|e| file_err(path, format!("not a usable root: {e}")))?;
                all.add(c).map_err(|e| file_err(path, format!("not a usable root: {e}")))?;
            }
            let store = Arc::new(store);
            let client = ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()?
                .with_root_certificates(store.clone())
                .with_client_auth_cert(chain.clone(), key.clone_key())?;
            clients.insert(*isd, Arc::new(client));
            let v = WebPkiServerVerifier::builder_with_provider(store, provider.clone())
                .build()
                .map_err(|e| TlsError::Verifier(e.to_string()))?;
            verifiers.insert(*isd, v);
        }
        let client_verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(all), provider.clone())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(chain, key)?;
        Ok(Self { server: Arc::new(server), clients, verifiers })
    }

    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.server.clone()
    }

    /// The client config for talking to a control service of ISD `isd`.
    pub fn client_config(&self, isd: u16) -> Result<Arc<ClientConfig>, TlsError> {
        self.clients.get(&isd).cloned().ok_or(TlsError::NoRoot(isd))
    }

    /// Every client config, by ISD.
    pub fn client_configs(&self) -> BTreeMap<u16, Arc<ClientConfig>> {
        self.clients.clone()
    }

    /// Whether the chain a client presented (end entity first) certifies the control
    /// service of `subject`: under the root of `subject`'s ISD and for `subject`'s name.
    pub fn check_subject(&self, chain: &[CertificateDer<'_>], subject: IsdAsn) -> Result<(), String> {
        let (ee, intermediates) = chain.split_first().ok_or("the client presented no certificate")?;
        let verifier = self
            .verifiers
            .get(&subject.isd())
            .ok_or_else(|| format!("this service trusts no root of ISD {}", subject.isd()))?;
        let name = ServerName::try_from(cs_name(subject)).map_err(|e| format!("{subject}: {e}"))?;
        verifier
            .verify_server_cert(ee, intermediates, &name, &[], UnixTime::now())
            .map(|_| ())
            .map_err(|e| format!("the client certificate does not certify {subject} ({}): {e}", cs_name(subject)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_names_and_distinct() {
        let a: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let b: IsdAsn = "1-64512".parse().unwrap();
        assert_eq!(cs_name(a), "1-ff00-0-110.cs.scion.invalid");
        assert_eq!(cs_name(b), "1-64512.cs.scion.invalid");
        for ia in [a, b] {
            ServerName::try_from(cs_name(ia)).unwrap();
        }
    }
}
