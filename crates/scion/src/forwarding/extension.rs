//! What a mechanism implements to run in the staged forwarder ([`super::staged`]): the record
//! a packet carries between the stages ([`Staged`]), the full MACs of its verified hop fields
//! ([`HopAuth`]), and the mechanism's part of each stage ([`HopExtension`]); standard SCION is
//! the extension that adds nothing ([`Standard`]).

use aviary_aes::cpu::Cpu;
use aviary_qos::{Admission, DropReason};

use super::{AsForwarding, HopWork};
use crate::mac::{HopMacKey, MAC_LEN};
use crate::wire::header::ScionView;

/// One packet between the stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staged<W> {
    /// Offset of the path header in the packet (the common and address headers end before
    /// byte 1020: HdrLen counts 4-byte units in one byte).
    pub path_start: u16,
    /// Offset of the info and hop fields' layout (the one [`HopWork`]'s offsets count from)
    /// within the path header: 0 but for path types that put fields of their own in front of
    /// a standard path ([`HopExtension::hop_layout_offset`]).
    pub layout_offset: u16,
    pub hop: HopWork,
    /// The mechanism's part, for packets of its path types that need its processing.
    pub ext: Option<W>,
}

impl<W> Staged<W> {
    /// The hop layout of `pkt`, the packet this was prepared from.
    #[inline]
    pub fn layout<'p>(&self, pkt: &'p [u8]) -> &'p [u8] {
        let (start, end) = self.proven_span(pkt.len());
        debug_assert!(start + end <= pkt.len());
        // SAFETY: `start + end <= pkt.len()` (just checked).
        unsafe { pkt.get_unchecked(start..) }
    }

    /// The path header of `pkt`, the packet this was prepared from, and the hop layout in it
    /// (at `layout_offset`), not checked again.
    ///
    /// # Safety
    /// [`Self::layout`] passed for this record and a packet of `pkt`'s length: the layout
    /// holds every field the work points at.
    #[inline(always)]
    pub(super) unsafe fn path_and_layout<'p>(&self, pkt: &'p mut [u8]) -> (&'p mut [u8], usize) {
        let (start, end) = (usize::from(self.path_start) + usize::from(self.layout_offset), usize::from(self.hop.end));
        debug_assert!(start + end <= pkt.len());
        // SAFETY: `path_start <= start <= start + end <= pkt.len()` (the caller's promise).
        (unsafe { pkt.get_unchecked_mut(usize::from(self.path_start)..) }, usize::from(self.layout_offset))
    }

    /// Where the hop layout starts in the packet and how far into it the fields of the work
    /// reach, checked once against the packet's length `len`: one compare instead of one per
    /// slicing and [`HopWork`]'s own (which then folds away). As there, a shorter packet is a
    /// mix-up of packets in the code.
    #[inline(always)]
    fn proven_span(&self, len: usize) -> (usize, usize) {
        let start = usize::from(self.path_start) + usize::from(self.layout_offset);
        let end = usize::from(self.hop.end);
        assert!(start + end <= len, "staged work applied to a shorter packet");
        (start, end)
    }
}

/// The full 16-byte AES-CMACs of the hop field(s) an AS verified, of which the hop-field MAC
/// is the first 6 bytes (EPIC's authenticator σ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopAuth {
    /// Of the current hop field.
    pub current: [u8; 16],
    /// Of the next segment's first hop field, at a segment crossover.
    pub next: Option<[u8; 16]>,
}

impl HopAuth {
    /// The hop-field MACs to compare with the ones the path carries.
    #[inline]
    pub fn macs(&self) -> ([u8; MAC_LEN], Option<[u8; MAC_LEN]>) {
        (truncated(&self.current), self.next.as_ref().map(truncated))
    }
}

/// The hop-field MAC: the first bytes of the full CMAC.
#[inline]
pub(super) fn truncated(full: &[u8; 16]) -> [u8; MAC_LEN] {
    full[..MAC_LEN].try_into().expect("a CMAC holds a hop-field MAC")
}

/// A mechanism's part of forwarding: its own path types' fields and cryptography.
pub trait HopExtension {
    /// What the mechanism carries from stage 1 to the later stages for one packet.
    type Work: Copy;

    /// What admitting the mechanism's packets needs of their ingress and arrival time, worked
    /// out once for a batch ([`Self::admit_context`]), which shares both, and passed to
    /// [`Self::admit`] for each of its packets.
    type Admit;

    /// The [`Self::Admit`] of packets that arrived on `ingress` at `now_ns`. A batch asks for it
    /// once, before stage 4; a packet alone only if it carries the mechanism's part.
    fn admit_context(&self, ingress: u16, now_ns: u64) -> Self::Admit;

    /// Stage 1 for a packet whose path type is neither empty nor standard: parse and check
    /// without cryptography. Without an extension, such packets are unsupported.
    fn prepare(
        &self,
        fwd: &AsForwarding,
        view: &ScionView<&[u8]>,
        ingress: u16,
    ) -> Result<(HopWork, Option<Self::Work>), DropReason> {
        let _ = (fwd, view, ingress);
        Err(DropReason::UnsupportedPathType)
    }

    /// The path type of the mechanism whose stage 1 runs as one pass over the packet's raw
    /// words ([`Self::prepare_raw`]), if any; its other path types take [`Self::prepare`].
    const RAW_PATH_TYPE: Option<u8> = None;

    /// Stage 1 for a packet of a path type other than the standard one, in one pass over its
    /// raw words, if the mechanism has one ([`Self::RAW_PATH_TYPE`]): the packet's record if it
    /// is of that path type and every check of [`Self::prepare`]'s route passes (the same
    /// record as there), `None` otherwise. The forwarder then takes [`Self::prepare`]'s route,
    /// which names the drop reason (or handles the other path types): the pass itself need not
    /// say which check failed.
    fn prepare_raw(&self, fwd: &AsForwarding, pkt: &[u8], ingress: u16) -> Option<Staged<Self::Work>> {
        let _ = (fwd, pkt, ingress);
        None
    }

    /// Where the info and hop fields' layout starts in a path of `path_type` (a type this
    /// extension prepares): fields in front of it are the mechanism's own.
    fn hop_layout_offset(&self, path_type: u8) -> u16 {
        let _ = path_type;
        0
    }

    /// Stage 2 over the whole batch of at most `N` packets that arrived on `ingress`: every
    /// `Some` entry of `batch` with an `ext` needs its cryptography; it must set the hop's MAC
    /// to verify ([`HopWork::set_mac`]). `batch[i]` was prepared from `pkts[i]`, where the
    /// mechanism reads its fields. `N` sizes the stage's scratch space on the stack (1 for a
    /// single packet).
    ///
    /// `cpu` says which AES code this copy of the stages runs ([`aviary_aes::cpu::Cpu`]): pass
    /// it to the AES calls (the `_on` functions), which then ask the CPU nothing.
    fn crypto<const N: usize>(
        &mut self,
        cpu: impl Cpu,
        pkts: &[&mut [u8]],
        batch: &mut [Option<Staged<Self::Work>>],
        ingress: u16,
    ) {
        let _ = (cpu, pkts, batch, ingress);
    }

    /// Stage 2 for a batch of one (`pkts` and `batch` hold at most one packet), and stage 3's
    /// CMAC under `key` of the packet's current hop field if the mechanism computes it here:
    /// returned, it must be the full CMAC of that hop field's MAC input once the mechanism has
    /// set the MAC to verify, and it is what the forwarder verifies; `None` leaves it to stage
    /// 3. The default is [`Self::crypto`] alone. A mechanism whose cryptography is a chain of
    /// dependent AES steps can compute the CMAC inside it ([`HopWork::mac_input`]: the input,
    /// and how the MAC the mechanism sets changes it), its rounds beside the chain's or right
    /// after it, in registers: a packet alone has no other packets' AES work to fill the wait.
    ///
    /// `cpu` says which AES code this copy of the stages runs ([`aviary_aes::cpu::Cpu`]): pass
    /// it to the AES calls (the `_on` functions), which then ask the CPU nothing.
    fn crypto_single(
        &mut self,
        cpu: impl Cpu,
        pkts: &[&mut [u8]],
        batch: &mut [Option<Staged<Self::Work>>],
        ingress: u16,
        key: &HopMacKey,
    ) -> Option<[u8; 16]> {
        let _ = (cpu, key);
        self.crypto::<1>(cpu, pkts, batch, ingress);
        None
    }

    /// Stage 4, for a packet whose hop field(s) verified, whose path was updated and which
    /// carries the mechanism's part `ext` (`staged.ext`): check and write back the mechanism's
    /// fields (`path` is the whole path header, `auth` the full MACs of the verified hop fields)
    /// and decide what the packet has earned, or drop it. Not called for a packet without the
    /// mechanism's part (a standard packet, or a hop the mechanism does not authenticate): the
    /// forwarder gives that one [`Admission::UNAUTHENTICATED`] itself. `at` is the
    /// [`Self::admit_context`] of the packet's ingress and time.
    fn admit(
        &mut self,
        path: &mut [u8],
        staged: &Staged<Self::Work>,
        ext: &Self::Work,
        auth: &HopAuth,
        at: &Self::Admit,
    ) -> Result<Admission, DropReason> {
        let _ = (path, staged, ext, auth, at);
        Ok(Admission::UNAUTHENTICATED)
    }

    /// Whether the mechanism's own keys are in a rotation's overlap at `now_ns`.
    fn in_overlap(&self, now_ns: u64) -> bool {
        let _ = now_ns;
        false
    }

    /// Stage 2 for one packet under the mechanism's previous keys, during their overlap: the
    /// packet `pkt` comes fresh from stage 1. `false` if it needs no cryptography of the
    /// mechanism or there is no previous key (then only the current one applies).
    fn crypto_previous(&mut self, pkt: &[u8], staged: &mut Staged<Self::Work>, now_ns: u64) -> bool {
        let _ = (pkt, staged, now_ns);
        false
    }
}

/// Standard SCION alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct Standard;

impl HopExtension for Standard {
    type Work = ();
    type Admit = ();

    fn admit_context(&self, _ingress: u16, _now_ns: u64) {}
}
