//! The mechanisms a border router hosts: one [`Processor`] per mechanism, chosen per
//! packet by its SCION path type. A batch whose packets all have one path type (the usual
//! case) goes to its processor as it is; a mixed batch is grouped by processor first,
//! keeping the order of packets of the same type.

use aviary_qos::{DropReason, Processor, Verdict};

/// Offset of the path type in the SCION common header.
const PATH_TYPE_OFFSET: usize = 8;
const NONE: u8 = u8::MAX;

pub struct Pipeline {
    processors: Vec<Box<dyn Processor>>,
    /// Processor index per path type; `NONE` for unsupported types.
    by_type: [u8; 256],
}

impl Pipeline {
    /// The first processor that claims a path type handles it.
    pub fn new(processors: Vec<Box<dyn Processor>>) -> Self {
        let mut by_type = [NONE; 256];
        for (i, p) in processors.iter().enumerate() {
            for &t in p.path_types() {
                if by_type[usize::from(t)] == NONE {
                    by_type[usize::from(t)] = i as u8;
                }
            }
        }
        Self { processors, by_type }
    }

    fn key(&self, pkt: &[u8]) -> u8 {
        pkt.get(PATH_TYPE_OFFSET).map_or(NONE, |t| self.by_type[usize::from(*t)])
    }

    /// Processes a batch; `pkts` may be reordered across path types, and `verdicts[i]` is
    /// the verdict of `pkts[i]` as they are on return.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        let n = pkts.len().min(verdicts.len());
        let (pkts, verdicts) = (&mut pkts[..n], &mut verdicts[..n]);
        // Stable insertion sort by processor (batches are small; no allocation).
        for i in 1..n {
            let mut j = i;
            while j > 0 && self.key(pkts[j - 1]) > self.key(pkts[j]) {
                pkts.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut start = 0;
        while start < n {
            let k = self.key(pkts[start]);
            let mut end = start + 1;
            while end < n && self.key(pkts[end]) == k {
                end += 1;
            }
            match self.processors.get_mut(usize::from(k)) {
                Some(p) => p.process_batch(&mut pkts[start..end], ingress, now_ns, &mut verdicts[start..end]),
                None => {
                    for (p, v) in pkts[start..end].iter().zip(&mut verdicts[start..end]) {
                        let reason = if p.len() <= PATH_TYPE_OFFSET {
                            DropReason::Truncated
                        } else {
                            DropReason::UnsupportedPathType
                        };
                        *v = Verdict::Drop(reason);
                    }
                }
            }
            start = end;
        }
    }

    /// Sets a runtime parameter on every processor that knows it.
    pub fn set_param(&mut self, name: &str, value: f64) -> Result<(), String> {
        let mut known = false;
        for p in &mut self.processors {
            known |= p.set_param(name, value)?;
        }
        if known {
            Ok(())
        } else {
            Err(format!("no mechanism of this router has a parameter `{name}`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forwards on egress = its tag and records what it saw.
    struct Tagger(&'static [u8], u16);

    impl Processor for Tagger {
        fn path_types(&self) -> &'static [u8] {
            self.0
        }
        fn process_batch(&mut self, pkts: &mut [&mut [u8]], _: u16, _: u64, verdicts: &mut [Verdict]) {
            for (p, v) in pkts.iter_mut().zip(verdicts) {
                p[0] = self.1 as u8;
                *v = Verdict::best_effort(self.1);
            }
        }
        fn set_param(&mut self, name: &str, _: f64) -> Result<bool, String> {
            Ok(name == "x" && self.1 == 1)
        }
    }

    fn pkt(ptype: u8, seq: u8) -> Vec<u8> {
        let mut p = vec![0u8; 12];
        p[PATH_TYPE_OFFSET] = ptype;
        p[11] = seq;
        p
    }

    #[test]
    fn mixed_batches_go_to_their_processors_in_order() {
        let mut pl = Pipeline::new(vec![Box::new(Tagger(&[1, 5], 1)), Box::new(Tagger(&[3, 5], 2))]);
        let mut bufs: Vec<Vec<u8>> =
            [(5, 0), (3, 1), (9, 2), (1, 3), (3, 4), (5, 5), (0, 6)].map(|(t, s)| pkt(t, s)).to_vec();
        bufs.push(vec![0; 3]);
        let mut pkts: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let mut v = [Verdict::Deliver; 8];
        pl.process_batch(&mut pkts, 1, 0, &mut v);
        for (p, v) in pkts.iter().zip(v) {
            match p.get(PATH_TYPE_OFFSET) {
                Some(1 | 5) => assert_eq!(v, Verdict::best_effort(1)),
                Some(3) => assert_eq!(v, Verdict::best_effort(2)),
                Some(_) => assert_eq!(v, Verdict::Drop(DropReason::UnsupportedPathType)),
                None => assert_eq!(v, Verdict::Drop(DropReason::Truncated)),
            }
        }
        // Packets of one path type keep their order.
        let seq =
            |t: u8| pkts.iter().filter(|p| p.get(PATH_TYPE_OFFSET) == Some(&t)).map(|p| p[11]).collect::<Vec<_>>();
        assert_eq!(seq(5), [0, 5]);
        assert_eq!(seq(3), [1, 4]);
        assert!(pl.set_param("x", 1.0).is_ok());
        assert!(pl.set_param("y", 1.0).is_err());
    }
}
