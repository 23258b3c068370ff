//! The mechanisms a border router hosts: one [`Processor`] per mechanism, chosen per packet by
//! what it claims (a hop-by-hop option the packet carries, else its SCION path type). A batch
//! whose packets all go to one processor (the usual case) is handed over as it is; a mixed batch
//! is grouped by processor first, keeping the order of packets of the same processor. Drops are
//! counted here, per processor, so that no mechanism has to count its own.

use aviary_qos::{drop_label, Admission, Claim, Context, ControlError, DropCounters, DropReason, Processor, Verdict};
use aviary_scion::wire::extension::hop_by_hop_options;
use thiserror::Error;

/// Offset of the path type in the SCION common header.
const PATH_TYPE_OFFSET: usize = aviary_scion::wire::header::field::PATH_TYPE;
const NONE: u8 = u8::MAX;

/// Why a set of processors cannot share a router.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PipelineError {
    #[error("{claim} is claimed by both `{first}` and `{second}`")]
    ClaimedTwice { claim: Claim, first: &'static str, second: &'static str },
    #[error("admission {id} is declared by both `{first}` and `{second}`")]
    AdmissionTwice { id: u8, first: &'static str, second: &'static str },
    #[error("`{mechanism}` declares admission {id}; a mechanism's own admissions are {lo}..{hi}", lo = Admission::FIRST_OWN, hi = Admission::LIMIT)]
    AdmissionOutOfRange { mechanism: &'static str, id: u8 },
    #[error("two mechanisms are called `{0}`")]
    NameTwice(&'static str),
    #[error("at most {} mechanisms per router", NONE)]
    TooMany,
}

/// A runtime control request that found no taker, or that its mechanism refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ControlFailure {
    #[error("this router has no mechanism `{0}`")]
    NoMechanism(String),
    #[error("{mechanism}.{error}")]
    Refused { mechanism: &'static str, error: ControlError },
}

pub struct Pipeline {
    processors: Vec<Box<dyn Processor>>,
    drops: Vec<DropCounters>,
    /// Processor index per path type and per hop-by-hop option type; `NONE` if unclaimed.
    by_path_type: [u8; 256],
    by_option: [u8; 256],
    /// Whether any processor claims an option (else the extension is never parsed).
    any_option: bool,
}

impl Pipeline {
    /// Every key must be claimed by one processor only; names and own admissions are unique.
    pub fn new(processors: Vec<Box<dyn Processor>>) -> Result<Self, PipelineError> {
        if processors.len() >= usize::from(NONE) {
            return Err(PipelineError::TooMany);
        }
        let mut by_path_type = [NONE; 256];
        let mut by_option = [NONE; 256];
        let mut admission_owner = [NONE; Admission::LIMIT];
        for (i, p) in processors.iter().enumerate() {
            if let Some(other) = processors[..i].iter().find(|o| o.name() == p.name()) {
                return Err(PipelineError::NameTwice(other.name()));
            }
            for &claim in p.claims() {
                let slot = match claim {
                    Claim::PathType(t) => &mut by_path_type[usize::from(t)],
                    Claim::HopByHopOption(t) => &mut by_option[usize::from(t)],
                };
                if *slot != NONE {
                    let first = processors[usize::from(*slot)].name();
                    return Err(PipelineError::ClaimedTwice { claim, first, second: p.name() });
                }
                *slot = i as u8;
            }
            for &(a, _) in p.admissions() {
                if a.0 < Admission::FIRST_OWN || a.index() >= Admission::LIMIT {
                    return Err(PipelineError::AdmissionOutOfRange { mechanism: p.name(), id: a.0 });
                }
                let owner = &mut admission_owner[a.index()];
                if *owner != NONE {
                    let first = processors[usize::from(*owner)].name();
                    return Err(PipelineError::AdmissionTwice { id: a.0, first, second: p.name() });
                }
                *owner = i as u8;
            }
        }
        let any_option = by_option.iter().any(|&s| s != NONE);
        let drops = vec![DropCounters::default(); processors.len()];
        Ok(Self { processors, drops, by_path_type, by_option, any_option })
    }

    pub fn processors(&self) -> impl Iterator<Item = &dyn Processor> {
        self.processors.iter().map(|p| p.as_ref())
    }

    /// Every admission a packet may be forwarded with here: the standard ones and the
    /// processors' own, with their labels.
    pub fn admissions(&self) -> impl Iterator<Item = (Admission, &'static str)> + '_ {
        Admission::STANDARD.into_iter().chain(self.processors.iter().flat_map(|p| p.admissions().iter().copied()))
    }

    fn key(&self, pkt: &[u8]) -> u8 {
        if self.any_option {
            if let Some(k) = hop_by_hop_options(pkt).map(|t| self.by_option[usize::from(t)]).find(|&k| k != NONE) {
                return k;
            }
        }
        pkt.get(PATH_TYPE_OFFSET).map_or(NONE, |t| self.by_path_type[usize::from(*t)])
    }

    /// The label of `reason` for a packet (a processor's own reasons are labelled by it).
    pub fn drop_label(&self, pkt: &[u8], reason: DropReason) -> &'static str {
        match self.processors.get(usize::from(self.key(pkt))) {
            Some(p) => drop_label(p.as_ref(), reason),
            None => reason.label(),
        }
    }

    /// The index of the processor that handles `pkt` (the processors' count if none does), for
    /// counting its drops ([`super::metrics::IngressCounters::count_drop`]).
    pub fn processor_of(&self, pkt: &[u8]) -> usize {
        match self.key(pkt) {
            NONE => self.processors.len(),
            k => usize::from(k),
        }
    }

    /// Processes a batch; `pkts` may be reordered across processors, and `verdicts[i]` is the
    /// verdict of `pkts[i]` as they are on return.
    pub fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
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
            let (group, out) = (&mut pkts[start..end], &mut verdicts[start..end]);
            match self.processors.get_mut(usize::from(k)) {
                Some(p) => {
                    p.process_batch(ctx, group, out);
                    for v in out.iter() {
                        if let Verdict::Drop(r) = v {
                            self.drops[usize::from(k)].count(*r);
                        }
                    }
                }
                None => {
                    for (p, v) in group.iter().zip(out) {
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

    /// Passes a runtime control request to the mechanism called `name`.
    pub fn control(&mut self, name: &str, request: &serde_json::Value) -> Result<(), ControlFailure> {
        let p = self
            .processors
            .iter_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| ControlFailure::NoMechanism(name.to_owned()))?;
        p.control(request).map_err(|error| ControlFailure::Refused { mechanism: p.name(), error })
    }

    /// Rotates every mechanism's keys to those of `secret`, taken at `rotated_at_s`, in place
    /// (see [`Processor::rotate_secret_at`]); the replaced keys verify until
    /// `previous_until_ns`.
    pub fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64, rotated_at_s: u64) {
        for p in &mut self.processors {
            p.rotate_secret_at(secret, previous_until_ns, rotated_at_s);
        }
    }

    /// Per mechanism: its name, its drops by reason label and its own counters.
    pub fn report(&self) -> Vec<MechanismReport> {
        self.processors
            .iter()
            .zip(&self.drops)
            .map(|(p, d)| {
                let mut counters = Vec::new();
                p.counters(&mut |name, v| counters.push((name, v)));
                MechanismReport {
                    name: p.name(),
                    drops: d.iter(p.drop_reasons()).filter(|(_, n)| *n > 0).collect(),
                    counters,
                    settings: p.settings(),
                }
            })
            .collect()
    }
}

/// What the router publishes of one mechanism.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MechanismReport {
    pub name: &'static str,
    pub drops: Vec<(&'static str, u64)>,
    pub counters: Vec<(&'static str, u64)>,
    pub settings: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use aviary_qos::SeededRandom;

    use super::*;

    /// Forwards on egress = its tag and records what it saw; drops packets whose byte 11 is 0xff
    /// with its own reason.
    struct Tagger(&'static str, &'static [Claim], u16);

    impl Processor for Tagger {
        fn name(&self) -> &'static str {
            self.0
        }
        fn claims(&self) -> &'static [Claim] {
            self.1
        }
        fn process_batch(&mut self, _: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
            for (p, v) in pkts.iter_mut().zip(verdicts) {
                *v = if p[11] == 0xff {
                    Verdict::Drop(DropReason::Mechanism(0))
                } else {
                    p[0] = self.2 as u8;
                    Verdict::unauthenticated(self.2)
                };
            }
        }
        fn drop_reasons(&self) -> &'static [&'static str] {
            &["tagged_away"]
        }
        fn control(&mut self, request: &serde_json::Value) -> Result<(), ControlError> {
            match request.get("x") {
                Some(_) => Ok(()),
                None => Err(ControlError::new("x", "missing")),
            }
        }
    }

    fn pkt(ptype: u8, seq: u8) -> Vec<u8> {
        let mut p = vec![0u8; 12];
        p[PATH_TYPE_OFFSET] = ptype;
        p[11] = seq;
        p
    }

    fn run(pl: &mut Pipeline, pkts: &mut [&mut [u8]], v: &mut [Verdict]) {
        let mut random = SeededRandom::new(1);
        let mut ctx = Context { now_ns: 0, ingress: 1, links: &[], random: &mut random };
        pl.process_batch(&mut ctx, pkts, v);
    }

    #[test]
    fn mixed_batches_go_to_their_processors_in_order() {
        const A: &[Claim] = &[Claim::PathType(1), Claim::PathType(5)];
        const B: &[Claim] = &[Claim::PathType(3), Claim::PathType(4)];
        let mut pl = Pipeline::new(vec![Box::new(Tagger("a", A, 1)), Box::new(Tagger("b", B, 2))]).unwrap();
        let mut bufs: Vec<Vec<u8>> =
            [(5, 0), (3, 1), (9, 2), (1, 3), (3, 4), (5, 5), (0, 6), (3, 0xff)].map(|(t, s)| pkt(t, s)).to_vec();
        bufs.push(vec![0; 3]);
        let mut pkts: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let mut v = [Verdict::Deliver; 9];
        run(&mut pl, &mut pkts, &mut v);
        for (p, v) in pkts.iter().zip(v) {
            match (p.get(PATH_TYPE_OFFSET), p.get(11)) {
                (Some(3), Some(0xff)) => assert_eq!(v, Verdict::Drop(DropReason::Mechanism(0))),
                (Some(1 | 5), _) => assert_eq!(v, Verdict::unauthenticated(1)),
                (Some(3), _) => assert_eq!(v, Verdict::unauthenticated(2)),
                (Some(_), _) => assert_eq!(v, Verdict::Drop(DropReason::UnsupportedPathType)),
                (None, _) => assert_eq!(v, Verdict::Drop(DropReason::Truncated)),
            }
        }
        // Packets of one path type keep their order.
        let seq =
            |t: u8| pkts.iter().filter(|p| p.get(PATH_TYPE_OFFSET) == Some(&t)).map(|p| p[11]).collect::<Vec<_>>();
        assert_eq!(seq(5), [0, 5]);
        assert_eq!(seq(3), [1, 4, 0xff]);
        // The mechanism's own drop is counted under its own label, for it alone.
        let report = pl.report();
        assert_eq!(report[1].drops, [("tagged_away", 1)]);
        assert!(report[0].drops.is_empty());
        // Per interface, drops are counted by processor and labelled by it when published.
        let mut counters = crate::router::metrics::IngressCounters::new(&pl);
        counters.count_drop(pl.processor_of(&pkt(3, 0)), DropReason::Mechanism(0));
        counters.count_drop(pl.processor_of(&pkt(9, 0)), DropReason::BadMac);
        counters.count_drop(pl.processor_of(&pkt(1, 0)), DropReason::BadMac);
        let mut stats = crate::router::metrics::InterfaceStats::default();
        counters.publish(&pl, &mut stats);
        assert_eq!(stats.drops.into_iter().collect::<Vec<_>>(), [("bad_mac", 2), ("tagged_away", 1)]);
    }

    #[test]
    fn a_key_claimed_twice_is_an_error_naming_both() {
        const A: &[Claim] = &[Claim::PathType(1), Claim::PathType(5)];
        const B: &[Claim] = &[Claim::PathType(5)];
        let err = Pipeline::new(vec![Box::new(Tagger("first", A, 1)), Box::new(Tagger("second", B, 2))]).err();
        assert_eq!(
            err,
            Some(PipelineError::ClaimedTwice { claim: Claim::PathType(5), first: "first", second: "second" })
        );
        assert_eq!(err.unwrap().to_string(), "path type 5 is claimed by both `first` and `second`");
        const O: &[Claim] = &[Claim::HopByHopOption(9)];
        assert!(Pipeline::new(vec![Box::new(Tagger("o", O, 1)), Box::new(Tagger("p", O, 2))]).is_err());
        assert_eq!(
            Pipeline::new(vec![Box::new(Tagger("n", A, 1)), Box::new(Tagger("n", O, 2))]).err(),
            Some(PipelineError::NameTwice("n"))
        );
    }

    #[test]
    fn control_reaches_the_named_mechanism_only() {
        const A: &[Claim] = &[Claim::PathType(1)];
        let mut pl = Pipeline::new(vec![Box::new(Tagger("a", A, 1))]).unwrap();
        assert_eq!(pl.control("a", &serde_json::json!({"x": 1})), Ok(()));
        let err = pl.control("a", &serde_json::json!({})).unwrap_err();
        assert_eq!(err.to_string(), "a.x: missing");
        assert_eq!(pl.control("zz", &serde_json::json!({})), Err(ControlFailure::NoMechanism("zz".into())));
    }
}
