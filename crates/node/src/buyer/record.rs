//! The buyer's durable record of one purchase, written (mode 0600) before the purchase
//! transaction is sent: the ephemeral secret key the reservations are sealed to, where the
//! request ids will be found, and where the reservation files go. With it a buyer that was
//! killed after paying still opens what the ASes deliver (`aviary market wait`), lists its
//! requests and reclaims the ones an AS left undelivered past their deadline.
//!
//! The request ids are recorded once the purchase is mined; a buyer killed in between finds
//! them on chain: the requests numbered from `first_request` on that are filed for its account
//! with its ephemeral key.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use aviary_hummingbird::BuyerKey;
use aviary_market::client;
use aviary_market::{Address, Deployment, Ledger, B256, U256};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

/// One purchase, as the buyer keeps it on disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurchaseRecord {
    /// The buying account (the requester of every request).
    pub buyer: Address,
    /// The ephemeral X25519 secret the reservations are sealed to.
    secret_key: B256,
    pub src: IsdAsn,
    pub dst: IsdAsn,
    /// Whether the second half of the requests is the reverse direction.
    pub reverse: bool,
    /// How many redeem requests the purchase files (one per hop, both directions).
    pub hops: usize,
    pub start: u64,
    pub expiry: u64,
    pub bandwidth_kbps: u64,
    /// The chain's next request id before the purchase was sent.
    pub first_request: U256,
    /// The request ids in hop order, once known.
    #[serde(default)]
    pub requests: Vec<U256>,
    /// Where the reservation files go (none: the caller writes them).
    pub out: Option<PathBuf>,
    pub reverse_out: Option<PathBuf>,
    /// Every reservation arrived and was written.
    #[serde(default)]
    pub complete: bool,
}

/// What a record is created from.
pub struct NewPurchase {
    pub buyer: Address,
    pub ends: (IsdAsn, IsdAsn),
    pub reverse: bool,
    pub hops: usize,
    pub window: client::Window,
    pub out: Option<PathBuf>,
    pub reverse_out: Option<PathBuf>,
}

impl PurchaseRecord {
    /// A record for a purchase about to be sent with `key`, the chain's next request id being
    /// `first_request`.
    pub fn new(p: NewPurchase, key: &BuyerKey, first_request: U256) -> Self {
        Self {
            buyer: p.buyer,
            secret_key: B256::from(key.secret_bytes()),
            src: p.ends.0,
            dst: p.ends.1,
            reverse: p.reverse,
            hops: p.hops,
            start: p.window.start,
            expiry: p.window.expiry,
            bandwidth_kbps: p.window.bandwidth,
            first_request,
            requests: Vec::new(),
            out: p.out,
            reverse_out: p.reverse_out,
            complete: false,
        }
    }

    /// The ephemeral key the reservations are sealed to.
    pub fn key(&self) -> BuyerKey {
        BuyerKey::from_secret_bytes(&self.secret_key.0)
    }

    /// The record's file name in a state directory: its ephemeral public key, shortened.
    pub fn file_name(&self) -> String {
        format!("{}.json", &hex::encode(self.key().public())[..16])
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
    }

    /// Writes the record (mode 0600: it holds the secret key).
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::files::write_secret(path, &serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Every record in `dir` (none if it does not exist), by file name.
    pub fn all_in(dir: &Path) -> Result<Vec<(PathBuf, Self)>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
        };
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry.with_context(|| format!("cannot read {}", dir.display()))?.path();
            if path.extension().is_some_and(|x| x == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        paths.into_iter().map(|p| Self::load(&p).map(|r| (p, r))).collect()
    }

    /// The request ids: as recorded, or else found on chain (and recorded when all are).
    /// Empty if the purchase never made it onto the chain.
    pub fn resolve_requests(&mut self, ledger: &dyn Ledger, d: &Deployment) -> Result<Vec<U256>> {
        if self.requests.is_empty() {
            let key = B256::from(self.key().public());
            let found = client::find_requests(ledger, d, self.buyer, key, self.first_request)?;
            if found.len() == self.hops {
                self.requests = found.clone();
            }
            return Ok(found);
        }
        Ok(self.requests.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_record_keeps_its_key_and_is_written_for_its_owner_only() {
        let dir = aviary_scratch::ScratchDir::new("purchase-record");
        let key = BuyerKey::derive(b"record test");
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let p = NewPurchase {
            buyer: Address::repeat_byte(3),
            ends: (ia, ia),
            reverse: true,
            hops: 4,
            window: client::Window { start: 60, expiry: 660, bandwidth: 100 },
            out: Some(dir.join("fwd.json")),
            reverse_out: None,
        };
        let record = PurchaseRecord::new(p, &key, U256::from(7));
        let path = dir.join(record.file_name());
        record.save(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let back = PurchaseRecord::load(&path).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.key().public(), key.public());
        assert_eq!(PurchaseRecord::all_in(&dir).unwrap(), vec![(path, record)]);
        assert!(PurchaseRecord::all_in(&dir.join("none")).unwrap().is_empty());
    }
}
