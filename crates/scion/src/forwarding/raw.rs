//! Where each field of the path sits in a word read with [`crate::raw`]'s unchecked loads
//! (re-exported here for the forwarder's stages).

pub(crate) use crate::raw::{be_u32, be_u64, bytes, put};
use crate::wire::path::field;

/// The shift that brings the big-endian field ending at byte `end` of an 8-byte word to the
/// low bits.
const fn shift(end: usize) -> u32 {
    (8 * (8 - end)) as u32
}

/// An info field (8 bytes) as one big-endian word.
#[derive(Clone, Copy)]
pub(crate) struct InfoWord(pub u64);

impl InfoWord {
    #[inline(always)]
    pub fn flags(self) -> u8 {
        (self.0 >> shift(field::info::FLAGS + 1)) as u8
    }
    #[inline(always)]
    pub fn cons_dir(self) -> bool {
        self.flags() & field::info::CONS_DIR != 0
    }
    #[inline(always)]
    pub fn peering(self) -> bool {
        self.flags() & field::info::PEERING != 0
    }
    #[inline(always)]
    pub fn seg_id(self) -> u16 {
        (self.0 >> shift(field::info::SEG_ID.end)) as u16
    }
    #[inline(always)]
    pub fn timestamp(self) -> u32 {
        (self.0 >> shift(field::info::TIMESTAMP.end)) as u32
    }
}

/// The first 8 bytes of a hop field (flags, ExpTime, both interfaces, the MAC's first two
/// bytes) as one big-endian word.
#[derive(Clone, Copy)]
pub(crate) struct HopWord(pub u64);

impl HopWord {
    #[inline(always)]
    pub fn exp_time(self) -> u8 {
        (self.0 >> shift(field::hop::EXP_TIME + 1)) as u8
    }
    #[inline(always)]
    pub fn cons_ingress(self) -> u16 {
        (self.0 >> shift(field::hop::CONS_INGRESS.end)) as u16
    }
    #[inline(always)]
    pub fn cons_egress(self) -> u16 {
        (self.0 >> shift(field::hop::CONS_EGRESS.end)) as u16
    }
    /// Ingress and egress in the direction of travel.
    #[inline(always)]
    pub fn travel_interfaces(self, cons_dir: bool) -> (u16, u16) {
        if cons_dir {
            (self.cons_ingress(), self.cons_egress())
        } else {
            (self.cons_egress(), self.cons_ingress())
        }
    }
    /// ExpTime through ConsEgress, the hop field's part of its MAC input, in the low bits.
    #[inline(always)]
    pub fn mac_input_part(self) -> u64 {
        let bits = 8 * (field::hop::CONS_EGRESS.end - field::hop::EXP_TIME);
        (self.0 >> shift(field::hop::CONS_EGRESS.end)) & ((1 << bits) - 1)
    }
}
