//! The Z-Lane gateway of a source AS (the Z-Lane paper, §4.4 and App. C), sans I/O: hosts send
//! their per-AS EPIC packets (path type 253, validation fields under their own DRKey keys, QoS
//! flag clear) through it; it forwards them to the AS's router.
//!
//! For every packet, in the order of the paper's Table 3:
//! 1. **Parse and verify.** The packet must be per-AS EPIC from this AS at its first hop field,
//!    with a fresh timestamp, and its source must be who it claims: the gateway holds the AS's
//!    secrets, so it recomputes `V_0`, the validation field of the AS's own hop field under the
//!    host's key `K_{A_0→A_0:H_S}` (which only that host was given), and compares HVF 0. A
//!    spoofed source host fails here and is dropped before it is charged to anyone. Replays of
//!    a verified packet (which would drain their host's rate) are dropped as duplicates,
//!    unless `suppress_duplicates` is off (the routers still drop them further on).
//! 2. **Look up the host's bucket**: the token bucket of the host's rate group ([`config`]).
//! 3. **Check the rate.** A packet beyond it leaves without the QoS flag (cleared if the host
//!    set it), or is dropped, by [`OverRatePolicy`]; its HVFs stay the host's, so routers
//!    treat it as authenticated best effort.
//! 4. **Authorize** a packet within it: set the flag and replace every HVF i with
//!    `CBC-MAC_{K_{A_i→A_0}}(HVF i)[0:4]` ([`GatewayKey`]), keyed with the Level-1 key AS A_i
//!    issued to this AS, which no host knows; AS A_i checks that form ([`hvf_matches`]).
//!    [`PathKeys`] tells which AS owns each hop field. A path the gateway has no keys for
//!    leaves without the flag (counted as `no_path_keys`): it cannot be authorized.
//!
//! [`hvf_matches`]: aviary_scion::epic::per_as::hvf_matches

#[cfg(test)]
mod batch_tests;
pub mod config;
mod host_slots;
mod hosts;
pub mod path_keys;
#[cfg(test)]
mod security_tests;
#[cfg(test)]
mod tests;

use aviary_qos::{mechanism_drops, DuplicateFilterConfigError, KeyHash};
#[cfg(target_arch = "x86_64")]
use aviary_scion::cpu::AesNi;
use aviary_scion::cpu::{Cpu, Portable};
use aviary_scion::drkey::{
    prf, AsHostKey, DrkeyError, EpochSchedule, HostAddr as DrkeyHost, IssuerKeyring, Protocol, RotatingSecret,
};
use aviary_scion::epic::hvf::{hop_mac_block, hvf_eq, MacInput};
use aviary_scion::epic::per_as::{hop_validations, source_hvf};
use aviary_scion::epic::timestamp::{verify_timestamp, StaleTimestamp};
use aviary_scion::epic::EpicDuplicates;
use aviary_scion::mac::HopMacKey;
use aviary_scion::wire::epic::HVF_LEN;
use aviary_scion::wire::epic_per_as::{PerAsLayout, PerAsPathView};
use aviary_scion::{path_type, HostAddr, IsdAsn, ScionLayout, ScionView};
use thiserror::Error;

pub use config::{GatewayConfig, GatewayConfigError, OverRatePolicy, Prefix, RatePlan};
pub use hosts::{HostCounters, MAX_HOST_SLOTS};
pub use path_keys::{HopKeys, PathKeyError, PathKeys};

use host_slots::{HostHash, Tag};
use hosts::{HostSlot, HostTable};

const NS_PER_S: u64 = 1_000_000_000;
/// Packets per 4 s freshness span the duplicate filter is sized for, and its false positive
/// rate (a false positive drops one legitimate packet); as the routers'.
const DUPLICATES_PER_WINDOW: u64 = 250_000;
const DUPLICATE_FALSE_POSITIVE_RATE: f64 = 1e-6;

mechanism_drops! {
    /// Why the gateway dropped a packet.
    pub enum GatewayDrop {
        MalformedHeader => "malformed_header",
        NotPerAsEpic => "not_per_as_epic",
        MalformedPath => "malformed_path",
        NotFirstHop => "not_first_hop",
        ForeignSource => "foreign_source",
        TimestampFuture => "epic_timestamp_future",
        TimestampExpired => "epic_timestamp_expired",
        BadSourceHvf => "bad_source_hvf",
        Duplicate => "duplicate",
        OverRate => "over_rate",
    }
}

impl From<StaleTimestamp> for GatewayDrop {
    fn from(e: StaleTimestamp) -> Self {
        match e {
            StaleTimestamp::Future => GatewayDrop::TimestampFuture,
            StaleTimestamp::Expired => GatewayDrop::TimestampExpired,
        }
    }
}

/// What to do with a packet after the gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatewayVerdict {
    /// Within its host's rate: flagged and re-authenticated; forward to the router.
    Authorized,
    /// Forward to the router without the flag (over-rate, or a path without keys).
    Unflagged,
    Drop(GatewayDrop),
}

/// Packets whose source checks run side by side.
const STAGE: usize = 32;

/// What the parse of a packet found, filled once there and read by every later stage; the
/// MAC inputs of its source check go to the stage's arrays of its own (the chains run over
/// those), and its host's key, once looked up, too.
#[derive(Clone, Copy, Debug)]
struct Parsed {
    /// The packet's header and per-AS path as the parse checked them, for the later stages
    /// to view the same bytes again without checking them again.
    header: Option<(ScionLayout, PerAsLayout)>,
    /// The hash of the host's slot in the host table, and the slot, if it was known.
    hash: HostHash,
    slot: Option<HostSlot>,
    /// The source host, in the host table's form (made once, for its hash, lookup and charge).
    src_host: Tag,
}

impl Parsed {
    /// A placeholder for the slots of a stage that no packet fills.
    fn empty() -> Self {
        let (slot, hash, src_host) = (None, HostHash::default(), Tag::default());
        Self { header: None, hash, slot, src_host }
    }
}

/// The arrays of a stage, kept from one stage to the next rather than zeroed for each (about
/// 4 KB): a stage reads only the entries it wrote, those of its `n` packets that parsed.
struct Stage {
    live: [usize; STAGE],
    parsed: [Parsed; STAGE],
    sigmas: [[u8; 16]; STAGE],
    inputs: [MacInput; STAGE],
    keys: [AsHostKey; STAGE],
    v0: [[u8; 16]; STAGE],
    /// Each packet's identity hashed for the duplicate filter, if the gateway has one (apart
    /// from `Parsed`: 32 bytes aligned to 16 that the record would copy for every packet).
    duplicates: [KeyHash; STAGE],
}

impl Stage {
    fn new() -> Box<Self> {
        Box::new(Self {
            live: [0; STAGE],
            parsed: [Parsed::empty(); STAGE],
            sigmas: [[0; 16]; STAGE],
            inputs: [MacInput::default(); STAGE],
            keys: [AsHostKey::from_bytes([0; 16]); STAGE],
            v0: [[0; 16]; STAGE],
            duplicates: [KeyHash::default(); STAGE],
        })
    }
}

/// Why a gateway cannot start.
#[derive(Debug, Error)]
pub enum GatewayError {
    #[error(transparent)]
    Config(#[from] GatewayConfigError),
    #[error("drkey: {0}")]
    Drkey(#[from] DrkeyError),
    #[error("duplicate filter: {0}")]
    Duplicates(#[from] DuplicateFilterConfigError),
}

/// The gateway of one AS.
pub struct Gateway {
    ia: IsdAsn,
    policy: OverRatePolicy,
    mac_key: HopMacKey,
    keyring: IssuerKeyring,
    path_keys: PathKeys,
    hosts: HostTable,
    duplicates: Option<EpicDuplicates>,
    drops: [u64; GatewayDrop::ALL.len()],
    no_path_keys: u64,
    /// Taken by a batch while it runs.
    stage: Option<Box<Stage>>,
}

impl Gateway {
    /// The gateway of AS `ia`, keyed from the AS's master secret `secret` (its hop-field key
    /// from the current secret; DRKey secret value, to verify sources, and its own Level-1
    /// key, for its own hop fields, from the secret `secret` picks for the epoch),
    /// with the rates of `config`; `now_ns` picks the first DRKey epoch of `schedule`, which
    /// must be the AS's (its DRKey service's), or the gateway derives keys no host was given.
    /// Other ASes' keys and the topology's links go into [`Gateway::path_keys_mut`].
    pub fn new(
        ia: IsdAsn,
        secret: &RotatingSecret,
        schedule: EpochSchedule,
        config: &GatewayConfig,
        now_ns: u64,
    ) -> Result<Self, GatewayError> {
        Self::with_max_host_slots(ia, secret, schedule, config, now_ns, MAX_HOST_SLOTS)
    }

    /// [`Gateway::new`] with a host table of at most `max_slots` slots (a power of two from
    /// 64; it holds half as many hosts).
    pub fn with_max_host_slots(
        ia: IsdAsn,
        secret: &RotatingSecret,
        schedule: EpochSchedule,
        config: &GatewayConfig,
        now_ns: u64,
        max_slots: usize,
    ) -> Result<Self, GatewayError> {
        let plan = config.plan()?;
        let protocol = Protocol(config.drkey_protocol);
        let keyring = IssuerKeyring::with_secret(secret.clone(), protocol, schedule, now_ns / NS_PER_S)?;
        // The filter's hash key: a Level-1 key to an ISD-AS no AS has, as the routers'.
        let dup_key = *keyring.current().level1(IsdAsn::new(0, 0)).as_bytes();
        let duplicates = config
            .suppress_duplicates
            .then(|| EpicDuplicates::new(DUPLICATES_PER_WINDOW, DUPLICATE_FALSE_POSITIVE_RATE, dup_key))
            .transpose()?;
        // The host table's hash key, apart from the filter's: a secret, so that no host can
        // choose addresses whose slots collide.
        let hosts_key = prf(&dup_key, b"zlane gateway host table");
        let mut path_keys = PathKeys::new();
        path_keys.set_key(ia, &keyring.current().level1(ia));
        Ok(Self {
            ia,
            policy: config.over_rate,
            mac_key: HopMacKey::from_master_secret(secret.current()),
            keyring,
            path_keys,
            hosts: HostTable::new(&plan, config.burst_bytes, &hosts_key, max_slots),
            duplicates,
            drops: [0; GatewayDrop::ALL.len()],
            no_path_keys: 0,
            stage: Some(Stage::new()),
        })
    }

    pub fn ia(&self) -> IsdAsn {
        self.ia
    }

    /// The DRKey epoch's schedule and protocol the gateway's own keys follow.
    pub fn keyring(&self) -> &IssuerKeyring {
        &self.keyring
    }

    /// The topology's links and the Level-1 keys other ASes issued to this one.
    pub fn path_keys_mut(&mut self) -> &mut PathKeys {
        &mut self.path_keys
    }

    /// The topology's links and the keys in place.
    pub fn path_keys(&self) -> &PathKeys {
        &self.path_keys
    }

    /// Every host seen so far (while the host table had room) and its counters.
    pub fn hosts(&self) -> impl Iterator<Item = (HostAddr, &HostCounters)> {
        self.hosts.iter()
    }

    pub fn host(&self, host: &HostAddr) -> Option<&HostCounters> {
        self.hosts.get(host)
    }

    /// The packets of every host that found the host table full, together.
    pub fn untracked_hosts(&self) -> &HostCounters {
        self.hosts.untracked()
    }

    /// `(label, count)` of every drop reason.
    pub fn drops(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        GatewayDrop::LABELS.iter().copied().zip(self.drops.iter().copied())
    }

    /// Packets forwarded without the flag because a hop field's AS had no key.
    pub fn no_path_keys(&self) -> u64 {
        self.no_path_keys
    }

    /// Processes a batch received at `now_ns`, one verdict per packet; authorized packets
    /// are changed in place. The source checks of up to [`STAGE`] packets run side by side.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], now_ns: u64, verdicts: &mut [GatewayVerdict]) {
        if let Ok(true) = self.keyring.advance(now_ns / NS_PER_S) {
            let own = self.keyring.current().level1(self.ia);
            self.path_keys.set_key(self.ia, &own);
        }
        let mut stage = self.stage.take().unwrap_or_else(Stage::new);
        for (pkts, verdicts) in pkts.chunks_mut(STAGE).zip(verdicts.chunks_mut(STAGE)) {
            #[cfg(target_arch = "x86_64")]
            if let Some(ni) = AesNi::detect() {
                // SAFETY: `ni` proves the CPU has the features `process_stage_aes_ni` is
                // compiled for.
                unsafe { self.process_stage_aes_ni(ni, &mut stage, pkts, now_ns, verdicts) };
                continue;
            }
            self.process_stage(Portable, &mut stage, pkts, now_ns, verdicts);
        }
        self.stage = Some(stage);
    }

    /// [`Self::process_stage`] compiled with AES-NI enabled, so that the AES of the source
    /// check and of every hop's field is inlined (called from the baseline build, 5 ASes took
    /// 226 ns a packet instead of 127).
    ///
    /// # Safety
    /// The CPU has the features of `aviary_scion::cpu::AES_NI_FEATURES` (`ni` proves it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
    fn process_stage_aes_ni(
        &mut self,
        ni: AesNi,
        stage: &mut Stage,
        pkts: &mut [&mut [u8]],
        now_ns: u64,
        verdicts: &mut [GatewayVerdict],
    ) {
        self.process_stage(ni, stage, pkts, now_ns, verdicts);
    }

    #[inline(always)]
    fn process_stage(
        &mut self,
        cpu: impl Cpu,
        stage: &mut Stage,
        pkts: &mut [&mut [u8]],
        now_ns: u64,
        verdicts: &mut [GatewayVerdict],
    ) {
        // 1. Parse, and gather what the source check needs: the packets that pass are
        //    `live[..n]`, their records, their hop fields' CMAC input and their MAC input.
        let Stage { live, parsed, sigmas, inputs, keys, v0, duplicates } = stage;
        let mut n = 0;
        for (j, pkt) in pkts.iter().enumerate() {
            match self.parse(cpu, pkt, now_ns, (&mut inputs[n], &mut sigmas[n]), &mut duplicates[n]) {
                Ok(p) => {
                    (live[n], parsed[n]) = (j, p);
                    n += 1;
                }
                Err(d) => verdicts[j] = self.dropped(d),
            }
        }
        // 2. The hosts' entries and keys, each in a loop of its own: with tens of thousands of
        //    hosts the table is beyond the core's caches; their slots were prefetched at
        //    parse and their buckets and counters are here, so the misses of the stage's
        //    packets overlap instead of stalling one packet at a time.
        for p in &mut parsed[..n] {
            p.slot = self.hosts.find(&p.src_host, p.hash);
        }
        let drkeys = self.keyring.current();
        let epoch = drkeys.epoch().begin_s;
        for (p, key) in parsed[..n].iter().zip(keys.iter_mut()) {
            *key = match p.slot.and_then(|s| self.hosts.key(s, epoch)) {
                Some(k) => k,
                None => drkeys.as_host_on(cpu, self.ia, &DrkeyHost::from(&p.src_host.host())),
            };
        }
        // σ_0 of every packet under the AS's one hop-field key, interleaved.
        self.mac_key.macs_on(cpu, &mut sigmas[..n]);
        // 3. V_0 of every packet under its host's key, the chains side by side.
        for (input, sigma) in inputs[..n].iter_mut().zip(sigmas.iter()) {
            input.append_authenticator(sigma);
        }
        hop_validations(cpu, &keys[..n], &inputs[..n], &mut v0[..n]);
        // 4. Compare, charge and authorize, packet by packet.
        for i in 0..n {
            let j = live[i];
            verdicts[j] =
                match self.authorize(cpu, pkts[j], &parsed[i], (epoch, keys[i]), (&v0[i], duplicates[i]), now_ns) {
                    Ok(v) => v,
                    Err(d) => self.dropped(d),
                };
        }
    }

    fn dropped(&mut self, d: GatewayDrop) -> GatewayVerdict {
        self.drops[d as usize] += 1;
        GatewayVerdict::Drop(d)
    }

    /// Stage 1: the checks before the source's; the MAC input of `V_0` into `input`, the
    /// CMAC input of the AS's hop field (for σ_0) into `sigma_input`, and, if the gateway
    /// suppresses duplicates, the packet's identity's hash into `duplicate`.
    #[inline(always)]
    fn parse(
        &self,
        cpu: impl Cpu,
        pkt: &[u8],
        now_ns: u64,
        (input, sigma_input): (&mut MacInput, &mut [u8; 16]),
        duplicate: &mut KeyHash,
    ) -> Result<Parsed, GatewayDrop> {
        let view = ScionView::new_checked(pkt).map_err(|_| GatewayDrop::MalformedHeader)?;
        if view.path_type() != path_type::EPIC_PER_AS {
            return Err(GatewayDrop::NotPerAsEpic);
        }
        let src_ia = view.src_ia();
        if src_ia != self.ia {
            return Err(GatewayDrop::ForeignSource);
        }
        let path = PerAsPathView::new_checked(view.path()).map_err(|_| GatewayDrop::MalformedPath)?;
        let standard = path.standard();
        let meta = standard.meta();
        if meta.curr_hf != 0 || meta.curr_inf != 0 {
            return Err(GatewayDrop::NotFirstHop);
        }
        let (info, id) = (standard.info(0), path.pkt_id());
        verify_timestamp(info.timestamp, id.epic_ts, now_ns)?;
        // The host table's form of the source straight from its bytes (not decoded first).
        let tag = Tag::from_wire(view.src_type_len(), view.src_host_bytes());
        // Both inputs copied from the packet's bytes, not encoded again from decoded fields.
        *input = MacInput::from_wire(&view, info.timestamp.to_be_bytes(), path.pkt_id_bytes());
        *sigma_input = hop_mac_block(&standard, 0, 0);
        if let Some(d) = &self.duplicates {
            *duplicate = d.hash_on(cpu, src_ia, &tag.host(), info.timestamp, id);
            d.prefetch(*duplicate);
        }
        Ok(Parsed {
            header: Some((view.layout(), path.layout())),
            hash: self.hosts.prefetch_on(cpu, &tag),
            slot: None,
            src_host: tag,
        })
    }

    /// Stage 4: the source check against `v0`, the duplicate filter (`duplicate`: the hash the
    /// parse wrote), the host's bucket and the gateway's fields; `host_key` is the host's key
    /// and its epoch's start.
    #[inline(always)]
    fn authorize(
        &mut self,
        cpu: impl Cpu,
        pkt: &mut [u8],
        p: &Parsed,
        host_key: (u32, AsHostKey),
        (v0, duplicate): (&[u8; 16], KeyHash),
        now_ns: u64,
    ) -> Result<GatewayVerdict, GatewayDrop> {
        let pkt_len = pkt.len();
        // The bytes the parse checked, unchanged since: their layout holds.
        let (header, path) = p.header.ok_or(GatewayDrop::MalformedHeader)?;
        let mut view = ScionView::with_layout(pkt, header).map_err(|_| GatewayDrop::MalformedHeader)?;
        let mut path = PerAsPathView::with_layout(view.path_mut(), path).map_err(|_| GatewayDrop::MalformedPath)?;
        if !hvf_eq(&path.hvf(0), &source_hvf(v0)) {
            return Err(GatewayDrop::BadSourceHvf);
        }
        if let Some(d) = &mut self.duplicates {
            if !d.first_seen_hashed(duplicate, now_ns) {
                return Err(GatewayDrop::Duplicate);
            }
        }

        // 2 and 3. The host's bucket.
        let (within, counters) = self.hosts.charge((&p.src_host, p.slot), host_key, pkt_len, now_ns);
        if !within {
            counters.over_rate_packets += 1;
            counters.over_rate_bytes += pkt_len as u64;
            path.set_qos(false);
            return match self.policy {
                OverRatePolicy::Unflagged => Ok(GatewayVerdict::Unflagged),
                OverRatePolicy::Drop => {
                    counters.dropped_packets += 1;
                    Err(GatewayDrop::OverRate)
                }
            };
        }

        // 4. Every hop field's AS-level field.
        let standard = path.standard();
        let keys = match self.path_keys.resolve(self.ia, &standard) {
            Ok(keys) => keys,
            Err(_) => {
                self.no_path_keys += 1;
                path.set_qos(false);
                return Ok(GatewayVerdict::Unflagged);
            }
        };
        counters.compliant_packets += 1;
        counters.compliant_bytes += pkt_len as u64;
        // One key per hop field, and one HVF per hop field, rewritten through one slice of
        // them all (its bounds checked once, not per field).
        for (key, field) in keys.iter().zip(path.hvfs_mut().chunks_exact_mut(HVF_LEN)) {
            let hvf: &mut [u8; HVF_LEN] = field.try_into().expect("chunks of HVF_LEN");
            *hvf = key.hvf_on(cpu, hvf);
        }
        path.set_qos(true);
        Ok(GatewayVerdict::Authorized)
    }
}
