//! pathval's keys from SCION's DRKey (`aviary_scion::drkey`), under its own protocol id
//! [`PROTOCOL`] with protocol-specific secret values ([`Derivation::Specific`]), so that a
//! pathval key never equals a key of another protocol.
//!
//! - `K_{i(i+1)}`, between adjacent trusted routers: the Level-1 key `K_{R_{i+1} → R_i}`
//!   issued by the downstream router's AS. The downstream router verifies every packet, so it
//!   is the fast side that re-derives the key from its secret value; the upstream router
//!   fetches it once per epoch from the downstream AS's DRKey service.
//! - `K_{0n}`, between source and destination: the Level-3 host-host key
//!   `K_{Dst:H_dst → Src:H_src}` issued by the destination's AS, whose host gets it from its
//!   own AS; the source host fetches the Level-2 key `K_{Dst:H_dst → Src}` through its AS.

use aviary_scion::drkey::{Derivation, DrkeyError, Epoch, HostAddr, IssuerKeys, Level1Key, Protocol, RotatingSecret};
use aviary_scion::IsdAsn;

use crate::crypto::{EndToEndKey, LinkKey};

/// The DRKey protocol id of pathval (outside the ids scionproto predefines).
pub const PROTOCOL: Protocol = Protocol(0x7076);

/// The DRKey keys an AS issues for pathval in one epoch.
#[derive(Clone, Debug)]
pub struct PathvalIssuer(IssuerKeys);

impl PathvalIssuer {
    pub fn new(master_secret: &[u8], epoch: Epoch) -> Result<Self, DrkeyError> {
        Self::with_secret(&RotatingSecret::new(master_secret)?, epoch)
    }

    /// The keys of `epoch` from the master secret `secret` picks for it across a rotation.
    pub fn with_secret(secret: &RotatingSecret, epoch: Epoch) -> Result<Self, DrkeyError> {
        secret.issuer_keys(PROTOCOL, Derivation::Specific, epoch).map(Self)
    }

    /// `K_{i(i+1)}` when this AS holds router `i + 1` and `upstream` holds router `i`.
    pub fn link_key_from(&self, upstream: IsdAsn) -> LinkKey {
        LinkKey::new(*self.0.level1(upstream).as_bytes())
    }

    /// `K_{0n}` when this AS holds the destination host `dst_host` and the source is
    /// `src_host` in `src_ia`.
    pub fn end_to_end_key(&self, src_ia: IsdAsn, src_host: &HostAddr, dst_host: &HostAddr) -> EndToEndKey {
        end_to_end_key_from(&self.0.level1(src_ia), src_host, dst_host)
    }

    /// The Level-1 key `K_{this AS → subject}` of pathval's protocol: what `subject` fetches
    /// from this AS's DRKey service to derive the keys this AS issues it.
    pub fn level1(&self, subject: IsdAsn) -> Level1Key {
        self.0.level1(subject)
    }
}

/// `K_{0n}` derived by the source side from the Level-1 key `K_{Dst → Src}` it fetched:
/// `K_{Dst:H_dst → Src:H_src}`, the same key [`PathvalIssuer::end_to_end_key`] gives the
/// destination.
pub fn end_to_end_key_from(k_dst_src: &Level1Key, src_host: &HostAddr, dst_host: &HostAddr) -> EndToEndKey {
    let k = k_dst_src.host_as(Derivation::Specific, PROTOCOL, dst_host).host_host(src_host);
    EndToEndKey::new(*k.as_bytes())
}

/// `K_{i(i+1)}` held by the upstream router `i` from the Level-1 key `K_{R_{i+1} → R_i}` it
/// fetched from the downstream AS (the same key [`PathvalIssuer::link_key_from`] gives it).
pub fn link_key_from(k_down_up: &Level1Key) -> LinkKey {
    LinkKey::new(*k_down_up.as_bytes())
}

#[cfg(test)]
mod tests {
    use aviary_scion::drkey::SecretValue;

    use super::*;

    #[test]
    fn link_keys_are_level1_keys_of_the_protocol_specific_secret_value() {
        let epoch = Epoch::new(0, 86_400).unwrap();
        let issuer = PathvalIssuer::new(b"downstream master", epoch).unwrap();
        let up = IsdAsn::new(1, 0xff00_0000_0110);
        let sv = SecretValue::derive(b"downstream master", PROTOCOL, epoch).unwrap();
        let want = LinkKey::new(*sv.level1(up).as_bytes());
        let meta = Default::default();
        assert_eq!(
            issuer.link_key_from(up).validation_proof(&meta, 1, &[0; 16]),
            want.validation_proof(&meta, 1, &[0; 16])
        );
        let generic = SecretValue::derive(b"downstream master", Protocol::GENERIC, epoch).unwrap();
        let other = LinkKey::new(*generic.level1(up).as_bytes());
        assert_ne!(
            issuer.link_key_from(up).validation_proof(&meta, 1, &[0; 16]),
            other.validation_proof(&meta, 1, &[0; 16])
        );
        // The upstream side's copy from the fetched Level-1 key is the same key.
        assert_eq!(
            link_key_from(&issuer.level1(up)).validation_proof(&meta, 1, &[0; 16]),
            want.validation_proof(&meta, 1, &[0; 16])
        );
    }

    #[test]
    fn both_ends_derive_the_same_end_to_end_key() {
        let epoch = Epoch::new(0, 86_400).unwrap();
        let dst = PathvalIssuer::new(b"destination master", epoch).unwrap();
        let src_ia = IsdAsn::new(1, 0xff00_0000_0111);
        let (hs, hd) = (HostAddr::from_ip([127, 0, 1, 10].into()), HostAddr::from_ip([127, 0, 5, 10].into()));
        let meta = Default::default();
        let at_dst = dst.end_to_end_key(src_ia, &hs, &hd).concealment(&meta);
        assert_eq!(end_to_end_key_from(&dst.level1(src_ia), &hs, &hd).concealment(&meta), at_dst);
        assert_ne!(end_to_end_key_from(&dst.level1(src_ia), &hd, &hs).concealment(&meta), at_dst);
    }
}
