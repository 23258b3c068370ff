//! Border-router processing of EPIC paths as an extension of the staged forwarder: the hop
//! checks are the generic ones of [`AsForwarding::prepare_hop`] over the embedded standard
//! path; this adds the validation fields.
//!
//! - Path type 3 (EPIC-HP), as scionproto's router: at the penultimate hop field the packet's
//!   timestamp must be fresh and PHVF match, at the last one LHVF; both are keyed with the
//!   full CMAC of the hop field the AS just verified. Elsewhere the packet is standard SCION.
//! - The per-AS path: at every hop field, a fresh timestamp, HVF i matching `V_i` (keyed with
//!   the DRKey Level-2 key the AS derives from its secret value for the source host), the
//!   proof `V_i[4:8]` written back, and (if configured) duplicate suppression by
//!   (source, timestamp). At a segment crossover both hop fields of the AS are validated.

use aviary_qos::{Admission, DropReason};

use super::duplicates::EpicDuplicates;
use super::hvf::{cbc_mac_on, hvf_eq, hvf_on, MacInput};
use super::per_as::{hvf_matches, proof};
use super::timestamp::{verify_timestamp, StaleTimestamp};
#[cfg(target_arch = "x86_64")]
use crate::cpu::AesNi;
use crate::cpu::{Cpu, Portable};
use crate::drkey::{HostAddr as DrkeyHost, IssuerKeys};
use crate::forwarding::{AsForwarding, HopAuth, HopExtension, HopLayout, HopWork, Staged, StagedForwarder};
use crate::wire::epic::{field as hp_field, EpicPathError, EpicPathView, PktId, HVF_LEN};
use crate::wire::epic_per_as::{field as per_as_field, PerAsPathError, PerAsPathView};
use crate::wire::header::{path_type, HostAddr, ScionView};
use crate::wire::path_view::StandardPathView;
use crate::IsdAsn;

impl From<EpicPathError> for DropReason {
    fn from(e: EpicPathError) -> Self {
        match e {
            EpicPathError::Path(p) => p.into(),
            EpicPathError::Truncated => DropReason::MalformedPath,
        }
    }
}

impl From<PerAsPathError> for DropReason {
    fn from(e: PerAsPathError) -> Self {
        match e {
            PerAsPathError::Path(p) => p.into(),
            _ => DropReason::MalformedPath,
        }
    }
}

impl From<StaleTimestamp> for DropReason {
    fn from(e: StaleTimestamp) -> Self {
        match e {
            StaleTimestamp::Future => DropReason::EpicTimestampFuture,
            StaleTimestamp::Expired => DropReason::EpicTimestampExpired,
        }
    }
}

/// EPIC's part of forwarding.
#[derive(Clone, Debug, Default)]
pub struct Epic {
    /// This AS's DRKey keys for EPIC; without them per-AS paths are not supported.
    keys: Option<IssuerKeys>,
    duplicates: Option<EpicDuplicates>,
}

/// An AS's EPIC forwarder: standard SCION, path type 3 and, with DRKey keys, the per-AS path.
pub type EpicForwarder = StagedForwarder<Epic>;

impl Epic {
    /// Path type 3 only.
    pub fn hp_only() -> Self {
        Self::default()
    }
    /// Path type 3 and the per-AS path, whose fields are keyed under `keys` (the caller
    /// replaces them when the DRKey epoch changes), with optional duplicate suppression.
    pub fn new(keys: IssuerKeys, duplicates: Option<EpicDuplicates>) -> Self {
        Self { keys: Some(keys), duplicates }
    }
    pub fn set_keys(&mut self, keys: IssuerKeys) {
        self.keys = Some(keys);
    }
}

/// What an EPIC hop carries from parsing to the final stage.
#[derive(Clone, Copy, Debug)]
pub struct EpicWork {
    input: MacInput,
    info_ts: u32,
    epic_ts: u32,
    fields: Fields,
}

#[derive(Clone, Copy, Debug)]
enum Fields {
    /// EPIC-HP: the PHVF or LHVF this hop checks.
    LastTwo([u8; HVF_LEN]),
    /// Per-AS: where HVF i (and at a crossover HVF i+1) is, and who sent the packet.
    PerAs { hvf_off: usize, next_hvf_off: Option<usize>, qos: bool, src_ia: IsdAsn, src_host: HostAddr, counter: u32 },
}

impl EpicWork {
    fn new(view: &ScionView<&[u8]>, standard: &StandardPathView<&[u8]>, id: PktId, fields: Fields) -> Self {
        let info_ts = standard.info(0).timestamp;
        let input = MacInput::new(info_ts, id, view.src_ia(), &view.src_host(), view.payload_len());
        Self { input, info_ts, epic_ts: id.epic_ts, fields }
    }
}

fn prepare_on<L: HopLayout>(
    fwd: &AsForwarding,
    layout: &L,
    view: &ScionView<&[u8]>,
    ingress: u16,
) -> Result<HopWork, DropReason> {
    let mut work = fwd.prepare_hop(layout, view.src_ia(), view.dst_ia(), ingress)?;
    work.set_mac(work.mac());
    Ok(work)
}

impl HopExtension for Epic {
    type Work = EpicWork;
    /// The time: an EPIC hop's timestamp is checked against it.
    type Admit = u64;

    fn admit_context(&self, _ingress: u16, now_ns: u64) -> u64 {
        now_ns
    }

    fn prepare(
        &self,
        fwd: &AsForwarding,
        view: &ScionView<&[u8]>,
        ingress: u16,
    ) -> Result<(HopWork, Option<EpicWork>), DropReason> {
        match view.path_type() {
            path_type::EPIC => {
                let path = EpicPathView::new_checked(view.path())?;
                let standard = path.standard();
                let work = prepare_on(fwd, &standard, view, ingress)?;
                let (ch, n) = (usize::from(standard.meta().curr_hf), standard.num_hops());
                let hvf = match n - ch {
                    1 => path.lhvf(),
                    2 => path.phvf(),
                    _ => return Ok((work, None)),
                };
                let epic = EpicWork::new(view, &standard, path.pkt_id(), Fields::LastTwo(hvf));
                Ok((work, Some(epic)))
            }
            path_type::EPIC_PER_AS if self.keys.is_some() => {
                let path = PerAsPathView::new_checked(view.path())?;
                let standard = path.standard();
                let work = prepare_on(fwd, &standard, view, ingress)?;
                let ch = usize::from(standard.meta().curr_hf);
                let id = path.pkt_id();
                let fields = Fields::PerAs {
                    hvf_off: path.hvf_offset(ch),
                    next_hvf_off: work.at_crossover().then(|| path.hvf_offset(ch + 1)),
                    qos: path.qos(),
                    src_ia: view.src_ia(),
                    src_host: view.src_host(),
                    counter: id.counter,
                };
                Ok((work, Some(EpicWork::new(view, &standard, id, fields))))
            }
            _ => Err(DropReason::UnsupportedPathType),
        }
    }

    fn hop_layout_offset(&self, path_type: u8) -> u16 {
        match path_type {
            path_type::EPIC => hp_field::STANDARD_PATH as u16,
            path_type::EPIC_PER_AS => per_as_field::STANDARD_PATH as u16,
            _ => 0,
        }
    }

    fn admit(
        &mut self,
        path: &mut [u8],
        _staged: &Staged<EpicWork>,
        w: &EpicWork,
        auth: &HopAuth,
        &now_ns: &u64,
    ) -> Result<Admission, DropReason> {
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves the CPU has the features `admit_aes_ni` is compiled for.
            return unsafe { self.admit_aes_ni(ni, path, w, auth, now_ns) };
        }
        self.admit_on(Portable, path, w, auth, now_ns)
    }
}

impl Epic {
    /// [`Self::admit_on`] compiled with AES-NI enabled: the key derivation and CBC-MACs of a
    /// hop are small AES calls, inlined here (called one by one from the baseline build, the
    /// Z-Lane router row took 446 ns a packet instead of 303).
    ///
    /// # Safety
    /// The CPU has the features of `crate::cpu::AES_NI_FEATURES` (`ni` proves it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
    fn admit_aes_ni(
        &mut self,
        ni: AesNi,
        path: &mut [u8],
        w: &EpicWork,
        auth: &HopAuth,
        now_ns: u64,
    ) -> Result<Admission, DropReason> {
        self.admit_on(ni, path, w, auth, now_ns)
    }

    /// Stage 4 of an EPIC hop: the HVFs against the hop's MACs, on the AES code `cpu` says.
    #[inline(always)]
    fn admit_on(
        &mut self,
        cpu: impl Cpu,
        path: &mut [u8],
        w: &EpicWork,
        auth: &HopAuth,
        now_ns: u64,
    ) -> Result<Admission, DropReason> {
        verify_timestamp(w.info_ts, w.epic_ts, now_ns)?;
        match w.fields {
            Fields::LastTwo(field) => {
                if !hvf_eq(&field, &hvf_on(cpu, &auth.current, &w.input)) {
                    return Err(DropReason::BadHvf);
                }
            }
            Fields::PerAs { hvf_off, next_hvf_off, qos, src_ia, src_host, counter } => {
                let keys = self.keys.as_ref().ok_or(DropReason::UnsupportedPathType)?;
                let host = DrkeyHost::from(&src_host);
                let key = keys.as_host_on(cpu, src_ia, &host);
                // The current hop field's HVF and, at a crossover, the next one's: all are
                // checked before any is overwritten, so a dropped packet keeps its fields.
                let mut proofs = [(0usize, [0u8; HVF_LEN]); 2];
                let hops = std::iter::once((hvf_off, auth.current)).chain(next_hvf_off.zip(auth.next));
                let mut n = 0;
                for (off, sigma) in hops {
                    let v = cbc_mac_on(cpu, key.as_bytes(), &w.input.with_authenticator(&sigma));
                    let field: [u8; HVF_LEN] = path[off..off + HVF_LEN].try_into().expect("checked offset");
                    let as_key = || keys.level1_on(cpu, src_ia);
                    if !hvf_matches(cpu, &field, &v, qos, as_key) {
                        return Err(DropReason::BadHvf);
                    }
                    proofs[n] = (off, proof(&v));
                    n += 1;
                }
                if let Some(d) = &mut self.duplicates {
                    let id = PktId { epic_ts: w.epic_ts, counter };
                    if !d.first_seen(src_ia, &src_host, w.info_ts, id, now_ns) {
                        return Err(DropReason::Duplicate);
                    }
                }
                for (off, p) in &proofs[..n] {
                    let off = *off;
                    path[off..off + HVF_LEN].copy_from_slice(p);
                }
            }
        }
        Ok(Admission::AUTHENTICATED)
    }
}
