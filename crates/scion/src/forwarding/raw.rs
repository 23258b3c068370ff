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

/// The hop-field MAC's input block as one byte shuffle of the info and hop words, SegID
/// inserted apart (it is the record's, chained in stage 1 where SCION chains it). Compiled
/// for the AES-NI level's features (SSSE3 and SSE4.1 among them), which the stages that
/// inline it have.
#[cfg(target_arch = "x86_64")]
pub(crate) mod shuffled {
    use std::arch::x86_64::{__m128i, _mm_insert_epi16, _mm_set_epi64x, _mm_shuffle_epi8, _mm_storeu_si128};

    use super::{HopWord, InfoWord};
    use crate::mac::input;
    use crate::wire::path::field;
    use aviary_aes::cpu::AesNi;

    /// Where the hop word sits in the shuffled vector: its upper half, after the info word.
    const HOP_LANE: usize = 8;
    /// Where the SegID goes, as a 16-bit lane of the block.
    const SEG_ID_LANE: i32 = (input::SEG_ID.start / 2) as i32;
    const _: () = assert!(input::SEG_ID.start.is_multiple_of(2) && input::SEG_ID.end == input::SEG_ID.start + 2);

    /// `pshufb`'s mask over the vector `info bytes 0..8 | hop bytes 0..8`: block byte `k`
    /// takes the vector's byte `MASK[k]`, or zero where the top bit is set. Made from the
    /// tables of both layouts: the timestamp from the info field, ExpTime through ConsEgress
    /// (contiguous in both) from the hop field.
    const MASK: [u8; 16] = {
        let mut m = [0x80u8; 16];
        let mut j = 0;
        while j < input::TIMESTAMP.end - input::TIMESTAMP.start {
            m[input::TIMESTAMP.start + j] = (field::info::TIMESTAMP.start + j) as u8;
            j += 1;
        }
        assert!(field::hop::CONS_INGRESS.start == field::hop::EXP_TIME + 1);
        assert!(field::hop::CONS_EGRESS.start == field::hop::CONS_INGRESS.end);
        let mut j = 0;
        while j < input::HOP_PART.end - input::HOP_PART.start {
            m[input::HOP_PART.start + j] = (HOP_LANE + field::hop::EXP_TIME + j) as u8;
            j += 1;
        }
        m
    };

    /// Called only with proof of the features (`_ni`), so that it can be forced inline.
    #[inline(always)]
    pub(crate) fn mac_block(_ni: AesNi, seg_id: u16, info: InfoWord, hop: HopWord) -> [u8; 16] {
        // The words back in wire order (the byte swaps cancel with the loads'): byte `k` of
        // a field is lane byte `k` of the vector.
        let (info, hop) = (info.0.swap_bytes() as i64, hop.0.swap_bytes() as i64);
        let mut b = [0u8; 16];
        debug_assert!(size_of::<__m128i>() == b.len());
        // SAFETY: the CPU has SSSE3 and SSE4.1 (`_ni`); the mask and the block are 16 bytes as the vector (any bytes are a valid `__m128i`), the
        // unaligned store writes exactly the 16 bytes of `b`.
        unsafe {
            let mask: __m128i = std::mem::transmute::<[u8; 16], __m128i>(MASK);
            let v = _mm_shuffle_epi8(_mm_set_epi64x(hop, info), mask);
            let v = _mm_insert_epi16::<SEG_ID_LANE>(v, i32::from(seg_id.swap_bytes()));
            _mm_storeu_si128(b.as_mut_ptr().cast(), v);
        }
        b
    }
}
