//! A Z-Lane border router's processor: standard SCION and both EPIC path types through the
//! staged forwarder ([`EpicForwarder`]), then the classification of §4.5 on what EPIC verified.
//!
//! The forwarder admits a packet whose EPIC validation field verified as authenticated, and
//! everything else it forwards as unauthenticated. For a verified per-AS EPIC packet (path
//! type 253) with the QoS flag set, which verifies only in the gateway's form, this processor
//! reads the source ISD-AS from the address header and charges the packet to its origin's
//! guarantee on the egress link: G within it, A beyond it. Reservation traffic is
//! Hummingbird's (path type 5), which this router hosts beside it and which admits it as R.
//!
//! Runtime control takes the fields of [`ZlaneConfig`] that change the guarantees (`ases`,
//! `isds`, `rates`, `burst_bytes`; any subset) and applies them between two batches.

use aviary_qos::{Admission, Claim, Context, ControlError, DuplicateFilterConfigError, Processor, RateBound, Verdict};
use aviary_scion::drkey::{DrkeyError, EpochSchedule, IssuerKeyring, Protocol, RotatingSecret};
use aviary_scion::epic::{Epic, EpicDuplicates, EpicForwarder};
use aviary_scion::mac::HopMacKey;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::{path_type, AsForwarding, IsdAsn, ScionView};
use thiserror::Error;

use crate::classes::{GuaranteeConfigError, Guarantees, RouterClass, Verified, ZlaneConfig};

const NS_PER_S: u64 = 1_000_000_000;
/// Packets per 4 s freshness span the duplicate filter is sized for (about 60 kpps, ample for
/// the emulated network), and its false positive rate (a false positive drops one legitimate
/// packet).
const DUPLICATES_PER_WINDOW: u64 = 250_000;
const DUPLICATE_FALSE_POSITIVE_RATE: f64 = 1e-6;

/// Why a Z-Lane router cannot start.
#[derive(Debug, Error)]
pub enum ZlaneRouterError {
    #[error(transparent)]
    Config(#[from] GuaranteeConfigError),
    #[error("drkey: {0}")]
    Drkey(#[from] DrkeyError),
    #[error("duplicate filter: {0}")]
    Duplicates(#[from] DuplicateFilterConfigError),
}

/// The Z-Lane processor of one router.
pub struct ZlaneRouter {
    epic: EpicForwarder,
    keyring: IssuerKeyring,
    config: ZlaneConfig,
    guarantees: Guarantees,
    last_now_ns: u64,
    guaranteed: u64,
    overuse: u64,
}

impl ZlaneRouter {
    /// The processor of the router of `fwd`'s AS, keyed from the AS's master secret `drkey`
    /// (EPIC's DRKey keys and the duplicate filter's hash key), with the guarantees of `config` on the
    /// links given as their id and their guaranteed class's bound (μ_G); `now_ns` picks the
    /// first DRKey epoch of `schedule`, which must be the AS's (its DRKey service's): with
    /// another one the router derives keys no host was given, and every packet fails.
    pub fn new(
        fwd: AsForwarding,
        drkey: &RotatingSecret,
        schedule: EpochSchedule,
        config: ZlaneConfig,
        links: impl IntoIterator<Item = (u16, RateBound)>,
        now_ns: u64,
    ) -> Result<Self, ZlaneRouterError> {
        let own_isd = fwd.local_ia.isd();
        let plan = config.plan(own_isd)?;
        let protocol = Protocol(config.drkey_protocol);
        let keyring = IssuerKeyring::with_secret(drkey.clone(), protocol, schedule, now_ns / NS_PER_S)?;
        // The filter's hash key: a Level-1 key to an ISD-AS no AS has, so it is secret and
        // never a key the AS hands out.
        let dup_key = *keyring.current().level1(IsdAsn::new(0, 0)).as_bytes();
        let duplicates = EpicDuplicates::new(DUPLICATES_PER_WINDOW, DUPLICATE_FALSE_POSITIVE_RATE, dup_key)?;
        let epic = EpicForwarder::new(fwd, Epic::new(keyring.current().clone(), Some(duplicates)));
        let guarantees = Guarantees::new(&plan, links);
        Ok(Self { epic, keyring, config, guarantees, last_now_ns: now_ns, guaranteed: 0, overuse: 0 })
    }

    pub fn guarantees(&self) -> &Guarantees {
        &self.guarantees
    }

    /// The AS's DRKey keys the router verifies with: its schedule, protocol and current epoch.
    pub fn keyring(&self) -> &IssuerKeyring {
        &self.keyring
    }

    /// The class of a packet the forwarder admitted as authenticated.
    fn authorized(&mut self, pkt: &[u8], egress: u16, capacity_bps: u64, now_ns: u64) -> RouterClass {
        let Some(packet) = verified_epic(pkt) else { return RouterClass::Authenticated };
        let class = self.guarantees.classify(packet, egress, capacity_bps, pkt.len(), now_ns);
        match class {
            RouterClass::Guaranteed => self.guaranteed += 1,
            _ if matches!(packet, Verified::Epic { qos: true, .. }) => self.overuse += 1,
            _ => {}
        }
        class
    }
}

/// The source and QoS flag of a per-AS EPIC packet (path type 3 has no flag).
fn verified_epic(pkt: &[u8]) -> Option<Verified> {
    let view = ScionView::new_checked(pkt).ok()?;
    let qos = match view.path_type() {
        path_type::EPIC_PER_AS => PerAsPathView::new_checked(view.path()).ok()?.qos(),
        _ => false,
    };
    Some(Verified::Epic { src: view.src_ia(), qos })
}

impl Processor for ZlaneRouter {
    fn name(&self) -> &'static str {
        "zlane"
    }

    fn claims(&self) -> &'static [Claim] {
        &[
            Claim::PathType(path_type::EMPTY),
            Claim::PathType(path_type::SCION),
            Claim::PathType(path_type::EPIC),
            Claim::PathType(path_type::EPIC_PER_AS),
        ]
    }

    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
        let now = ctx.now_ns;
        self.last_now_ns = now;
        if let Ok(true) = self.keyring.advance(now / NS_PER_S) {
            self.epic.ext.set_keys(self.keyring.current().clone());
        }
        self.epic.process_batch(pkts, ctx.ingress, now, verdicts);
        for (pkt, v) in pkts.iter().zip(verdicts.iter_mut()) {
            if let Verdict::Forward { egress, admission: Admission::AUTHENTICATED } = *v {
                let capacity = ctx.link(egress).map_or(0, |l| l.rate_bps);
                let class = self.authorized(pkt, egress, capacity, now);
                *v = Verdict::forward(egress, class.admission());
            }
        }
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        out("guaranteed_packets", self.guaranteed);
        out("guarantee_overuse_packets", self.overuse);
        out("guarantee_bucket_bytes", self.guarantees.bucket_memory_bytes() as u64);
        out("previous_key_packets", self.epic.previous_key_packets);
    }

    /// The hop-field key rotates with an overlap like every forwarder's.
    fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        self.epic.fwd.rotate(HopMacKey::from_master_secret(secret), previous_until_ns);
    }

    /// EPIC's DRKey keys keep the secret of their epoch: those in hand do not change, the
    /// epochs to come take the new secret once [`RotatingSecret`] says so.
    fn rotate_secret_at(&mut self, secret: &[u8], previous_until_ns: u64, rotated_at_s: u64) {
        self.rotate_secret(secret, previous_until_ns);
        // An empty secret never reaches a processor (the management API refuses it).
        if self.keyring.rotate(secret, rotated_at_s).is_ok() {
            self.epic.ext.set_keys(self.keyring.current().clone());
        }
    }

    fn control(&mut self, request: &serde_json::Value) -> Result<(), ControlError> {
        let next = self.config.changed(request)?;
        let plan = next.plan(self.epic.fwd.local_ia.isd()).map_err(|e| ControlError::new(e.field(), e.to_string()))?;
        self.guarantees.replace(&plan, self.last_now_ns);
        self.config = next;
        Ok(())
    }

    fn settings(&self) -> serde_json::Value {
        let c = &self.config;
        serde_json::json!({ "ases": c.ases, "isds": c.isds, "rates": c.rates, "burst_bytes": c.burst_bytes })
    }
}
