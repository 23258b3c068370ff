//! Deterministic per-reservation policing (the Hummingbird paper, Alg. 1).
//!
//! The state is one 8-byte timestamp per reservation, indexed directly by the ResID that
//! the AS assigned uniquely per ingress interface. A packet is within its reservation if,
//! after charging its transmission time at the reserved rate, the reservation's virtual
//! clock is at most `BurstTime` ahead of now.
//!
//! Burst floor: a reservation's burst is never shorter than the time one packet of
//! `max_pkt_len` bytes takes at its rate, `max(BurstTime, max_pkt_len / rate)`; otherwise a
//! small reservation (5 kbit/s) could never send a packet larger than its rate times
//! `BurstTime` (31 bytes in 50 ms) with priority. The floor is computed from the packet's own
//! cost, which already holds the one division of Alg. 1: `cost / pkt_len` is the time per
//! byte, so `ahead ≤ cost · max_pkt_len / pkt_len` is checked as
//! `ahead · pkt_len ≤ cost · max_pkt_len`, with no further division, and only when the
//! configured burst alone refuses the packet.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicerConfigError {
    #[error("max_res_id {0} exceeds the 22-bit ResID space")]
    MaxResIdTooLarge(u32),
}

/// Per-ingress-interface policing array.
#[derive(Clone, Debug)]
pub struct ReservationPolicer {
    /// Virtual finish time (ns) of the last admitted byte, per ResID.
    next_free: Vec<u64>,
    burst_ns: u64,
    /// Largest packet the burst always admits (0: no floor).
    max_pkt_len: u16,
}

impl ReservationPolicer {
    /// An array for ResIDs `0..=max_res_id` with the given burst allowance and no burst floor.
    pub fn new(max_res_id: u32, burst_ns: u64) -> Result<Self, PolicerConfigError> {
        if max_res_id >= 1 << 22 {
            return Err(PolicerConfigError::MaxResIdTooLarge(max_res_id));
        }
        Ok(Self { next_free: vec![0; max_res_id as usize + 1], burst_ns, max_pkt_len: 0 })
    }

    /// The same, with the burst of each reservation raised to at least the time a packet of
    /// `max_pkt_len` bytes takes at its rate (see the module docs).
    pub fn with_burst_floor(max_res_id: u32, burst_ns: u64, max_pkt_len: u16) -> Result<Self, PolicerConfigError> {
        Ok(Self { max_pkt_len, ..Self::new(max_res_id, burst_ns)? })
    }

    pub fn max_pkt_len(&self) -> u16 {
        self.max_pkt_len
    }

    pub fn max_res_id(&self) -> u32 {
        (self.next_free.len() - 1) as u32
    }

    pub fn burst_ns(&self) -> u64 {
        self.burst_ns
    }

    pub fn set_burst_ns(&mut self, burst_ns: u64) {
        self.burst_ns = burst_ns;
    }

    /// Alg. 1 with the division: `rate_bps` is the decoded reserved bandwidth in bit/s.
    /// Returns whether the packet stays within the reservation (priority). A ResID beyond
    /// the array or a zero rate is never within a reservation.
    ///
    /// This, [`admit_table`](Self::admit_table) and what they call are forced inline: a
    /// router's admission calls them once per flyover packet, and with `#[inline]` alone they
    /// stayed calls (≈ 20 instructions a packet of calls and spills, docs/performance.md).
    #[inline(always)]
    pub fn admit(&mut self, res_id: u32, pkt_len: u16, rate_bps: u64, now_ns: u64) -> bool {
        match cost_exact(pkt_len, rate_bps) {
            Some(cost) => self.charge(res_id, pkt_len, cost, now_ns),
            None => false,
        }
    }

    /// Alg. 1 without a division: the cost comes from a precomputed inverse-rate table
    /// indexed by the packet's 10-bit bandwidth code.
    #[inline(always)]
    pub fn admit_table(
        &mut self,
        res_id: u32,
        pkt_len: u16,
        bw_code: u16,
        table: &InverseRateTable,
        now_ns: u64,
    ) -> bool {
        match table.cost(pkt_len, bw_code) {
            Some(cost) => self.charge(res_id, pkt_len, cost, now_ns),
            None => false,
        }
    }

    #[inline(always)]
    fn charge(&mut self, res_id: u32, pkt_len: u16, cost_ns: u64, now_ns: u64) -> bool {
        let max_pkt_len = self.max_pkt_len;
        let burst_ns = self.burst_ns;
        let Some(slot) = self.next_free.get_mut(res_id as usize) else {
            return false;
        };
        let ts = (*slot).max(now_ns).saturating_add(cost_ns);
        let ahead = ts - now_ns;
        if ahead <= burst_ns || within_floor(ahead, pkt_len, cost_ns, max_pkt_len) {
            *slot = ts;
            true
        } else {
            false
        }
    }

    /// Starts loading the policing slot of `res_id` into the cache (a hint: the slot of a
    /// router with many reservations is rarely cached; a batch asks for all its slots before
    /// its cryptography, which then hides the misses).
    #[inline]
    pub fn prefetch(&self, res_id: u32) {
        if let Some(slot) = self.next_free.get(res_id as usize) {
            crate::prefetch(slot);
        }
    }

    /// Forget the state of one reservation (e.g. when its ResID is reassigned).
    pub fn reset(&mut self, res_id: u32) {
        if let Some(slot) = self.next_free.get_mut(res_id as usize) {
            *slot = 0;
        }
    }
}

/// Whether the virtual clock `ahead` ns ahead of now is within the time a `max_pkt_len`-byte
/// packet takes at the rate that made `pkt_len` bytes cost `cost_ns`. A zero-length packet
/// tells nothing about the rate, so it gets no floor.
#[inline]
fn within_floor(ahead: u64, pkt_len: u16, cost_ns: u64, max_pkt_len: u16) -> bool {
    pkt_len != 0 && u128::from(ahead) * u128::from(pkt_len) <= u128::from(cost_ns) * u128::from(max_pkt_len)
}

/// Transmission time in ns of `pkt_len` bytes at `rate_bps`; `None` for a zero rate.
#[inline]
fn cost_exact(pkt_len: u16, rate_bps: u64) -> Option<u64> {
    (rate_bps != 0).then(|| (u64::from(pkt_len) * 8_000_000_000).div_ceil(rate_bps))
}

/// Numerators are `pkt_len · 16·10^9 − 2` (twice the cost's `n − 1`, see [`InverseRateTable`]):
/// below 2^[`NUM_BITS`] for a 64 KiB packet.
const NUM_BITS: u32 = 50;
const _: () = assert!((u16::MAX as u64) * 16_000_000_000 <= 1 << NUM_BITS);

/// The transmission time of a packet at each of the 1024 bandwidth codes' rates without a
/// division, and exactly the division's: `⌈pkt_len · 8·10^9 / rate⌉` ns, as
/// [`ReservationPolicer::admit`] computes it, for every length and rate. So policing by the table
/// is Alg. 1 as written, not an approximation of it.
///
/// With `n = pkt_len · 8·10^9`, the cost is `⌊(n − 1) / d⌋ + 1` for `n ≥ 1` (0 for `n = 0`), and
/// `⌊(n − 1) / d⌋ = ⌊(2n − 2) / D⌋` with `D = 2d ≥ 2`. For a divisor `D` and every numerator
/// below 2^N (N = [`NUM_BITS`]), `⌊x / D⌋ = ⌊x · m / 2^(N+l)⌋` with `m = ⌈2^(N+l) / D⌉` for any
/// `l ≥ ⌈log2 D⌉` (Granlund and Montgomery, "Division by invariant integers using
/// multiplication", PLDI 1994, Thm. 4.2: it needs `2^(N+l) ≤ m·D ≤ 2^(N+l) + 2^l`, and
/// `m·D − 2^(N+l) < D ≤ 2^l`). Choosing `N + l ≥ 64` makes the division the high word of one
/// 64×64-bit product shifted right by `N + l − 64`; `m < 2^64` holds because `D ≥ 2` (for
/// `N + l = 64`) or `D > 2^(l−1)` (above it, `m ≤ 2^(N+1)`).
#[derive(Clone, Debug)]
pub struct InverseRateTable {
    /// `(m, N + l − 64)` per code; `m = 0` for a zero rate.
    entries: Box<[(u64, u32); 1024]>,
}

impl InverseRateTable {
    /// Builds the table from a codec that maps a 10-bit code to bit/s.
    pub fn new(decode_bps: impl Fn(u16) -> u64) -> Self {
        let mut t = Box::new([(0u64, 0u32); 1024]);
        for (code, slot) in t.iter_mut().enumerate() {
            let d = decode_bps(code as u16);
            if d > 0 {
                let divisor = 2 * u128::from(d);
                let l = (u128::BITS - (divisor - 1).leading_zeros()).max(64 - NUM_BITS);
                let m = (1u128 << (NUM_BITS + l)).div_ceil(divisor);
                *slot = (u64::try_from(m).expect("m < 2^64 (see the type's docs)"), NUM_BITS + l - 64);
            }
        }
        Self { entries: t }
    }

    /// Transmission time in ns of `pkt_len` bytes at the rate of `bw_code`; `None` for a
    /// zero rate.
    #[inline(always)]
    fn cost(&self, pkt_len: u16, bw_code: u16) -> Option<u64> {
        let (m, shift) = self.entries[usize::from(bw_code & 0x3ff)];
        if m == 0 {
            return None;
        }
        let x = (u64::from(pkt_len) * 16_000_000_000).saturating_sub(2);
        let high = ((u128::from(x) * u128::from(m)) >> 64) as u64;
        Some((high >> shift) + u64::from(pkt_len != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rejects_res_id_space_overflow() {
        assert!(ReservationPolicer::new((1 << 22) - 1, 0).is_ok());
        assert_eq!(ReservationPolicer::new(1 << 22, 0).unwrap_err(), PolicerConfigError::MaxResIdTooLarge(1 << 22));
    }

    #[test]
    fn within_rate_is_admitted_forever_above_rate_only_for_the_burst() {
        // 1 Mbit/s, 1000-byte packets: 8 ms per packet; burst 50 ms.
        let mut p = ReservationPolicer::new(10, 50 * MS).unwrap();
        let mut now = 1_000 * MS;
        for _ in 0..1000 {
            assert!(p.admit(3, 1000, 1_000_000, now));
            now += 8 * MS;
        }
        // At twice the rate: the backlog grows 4 ms per packet, so ~12 more pass, then not.
        let mut admitted = 0;
        for _ in 0..100 {
            if p.admit(3, 1000, 1_000_000, now) {
                admitted += 1;
            }
            now += 4 * MS;
        }
        // Over 400 ms at 1 Mbit/s with 50 ms of burst: at most 450 ms worth = 56 packets.
        assert!((50..=57).contains(&admitted), "admitted {admitted}");
    }

    #[test]
    fn zero_rate_and_unknown_res_id_never_pass() {
        let mut p = ReservationPolicer::new(10, 50 * MS).unwrap();
        assert!(!p.admit(1, 100, 0, MS));
        assert!(!p.admit(11, 100, 1_000_000_000, MS));
        let table = InverseRateTable::new(|c| u64::from(c) * 1000);
        assert!(!p.admit_table(1, 100, 0, &table, MS));
        assert!(!p.admit_table(11, 100, 5, &table, MS));
    }

    #[test]
    fn reservations_are_independent() {
        // 1500 B at 1 Mbit/s take 12 ms: four fit in a 50 ms burst.
        let mut p = ReservationPolicer::new(10, 50 * MS).unwrap();
        let mut admitted = 0;
        while p.admit(1, 1500, 1_000_000, 0) {
            admitted += 1;
        }
        assert_eq!(admitted, 4);
        assert!(p.admit(2, 1500, 1_000_000, 0));
    }

    #[test]
    fn burst_floor_admits_one_maximum_size_packet_at_any_rate() {
        // 5 kbit/s: 126 bytes take 201.6 ms, four times a 50 ms burst.
        let table = InverseRateTable::new(|c| u64::from(c) * 1000);
        let mut plain = ReservationPolicer::new(10, 50 * MS).unwrap();
        assert!(!plain.admit(1, 126, 5_000, 0));
        assert!(!plain.admit_table(1, 126, 5, &table, 0));
        let mut p = ReservationPolicer::with_burst_floor(10, 50 * MS, 1500).unwrap();
        assert!(p.admit(1, 126, 5_000, 0));
        assert!(p.admit_table(2, 126, 5, &table, 0));
        // The floor is 1500 bytes' worth (2.4 s): eleven 126-byte packets (1386 B) at once,
        // not twelve (1512 B).
        let n = (0..20).take_while(|_| p.admit(3, 126, 5_000, 0)).count();
        assert_eq!(n, 11);
        // A packet larger than the floor's size is still refused beyond the burst.
        assert!(!p.admit(4, 1501, 5_000, 0));
        // Where the burst is longer than the floor, the burst rules: 1500 B at 1 Gbit/s.
        let mut fast = ReservationPolicer::with_burst_floor(10, 50 * MS, 1500).unwrap();
        assert_eq!((0..10_000).take_while(|_| fast.admit(1, 1500, 1_000_000_000, 0)).count(), 4166);
    }

    fn paper_codec_bps(c: u16) -> u64 {
        let (e, s) = (u64::from(c >> 5), u64::from(c & 31));
        1000 * if e == 0 { s } else { (32 + s) << (e - 1) }
    }

    proptest! {
        /// The division-free cost is the division's, for any rate.
        #[test]
        fn table_cost_is_the_division(bps in prop_oneof![0u64..1 << 20, any::<u64>()], len in 0u16..=u16::MAX) {
            let table = InverseRateTable::new(|_| bps);
            prop_assert_eq!(table.cost(len, 7), cost_exact(len, bps));
        }
    }

    /// Every code of both codecs (the paper's float one and the linear one), at the lengths
    /// where a ceiling is most likely to be off: around multiples of the rate's period.
    #[test]
    fn table_cost_is_the_division_for_every_code() {
        let linear = |c: u16| u64::from(c) * 512;
        for decode in [paper_codec_bps as fn(u16) -> u64, linear] {
            let table = InverseRateTable::new(decode);
            for code in 0..1024u16 {
                let lens = (0..=1600u16).chain((1..=64).map(|k| u16::MAX - k)).chain([u16::MAX]);
                for len in lens {
                    assert_eq!(table.cost(len, code), cost_exact(len, decode(code)), "code {code} len {len}");
                }
            }
        }
    }

    /// The largest numerator and the smallest and largest rates, where the multiplier or the
    /// product would overflow first.
    #[test]
    fn table_cost_is_the_division_at_the_extremes() {
        for bps in [1, 2, 3, 511, 512, 513, 999, 1000, (63u64 << 30) * 1000, 1 << 63, u64::MAX - 1, u64::MAX] {
            let table = InverseRateTable::new(|_| bps);
            for len in [0, 1, 2, 1499, 1500, u16::MAX - 1, u16::MAX] {
                assert_eq!(table.cost(len, 0), cost_exact(len, bps), "{bps} bit/s, {len} B");
            }
        }
    }
}
