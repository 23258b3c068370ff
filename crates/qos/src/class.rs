//! Traffic classes as data.
//!
//! A mechanism decides what a packet has earned: its [`Admission`] (a valid reservation, an
//! authenticated source within its guarantee, ...). What the router makes of that is the
//! operator's choice, written down as data: every egress link has a [`ClassTable`] (the classes
//! of its scheduler, in priority order, with queue bounds and rate bounds, and the link's
//! [`LinkPolicy`]), and a [`Classifier`] maps each admission to a class of that table by name.
//! So Hummingbird's "reserved" is class R on a router configured as Z-Lane specifies, and
//! "priority" on a plain one, without Hummingbird knowing either.

use thiserror::Error;

/// What a mechanism decided a forwarded packet has earned. The five standard admissions,
/// from most to least, are shared by every mechanism; a mechanism may declare admissions of its
/// own (ids from [`Admission::FIRST_OWN`]) with labels the router's classifier maps by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Admission(pub u8);

impl Admission {
    /// Traffic of a valid reservation within its reserved rate (Hummingbird flyovers; Z-Lane's queue R).
    pub const RESERVED: Self = Self(0);
    /// Control traffic from or to a neighbouring AS (Z-Lane's queue N: key bootstrapping, BFD).
    pub const NEIGHBOR: Self = Self(1);
    /// AS-level authenticated traffic within the rate its source AS or ISD is guaranteed
    /// (Z-Lane's queue G; a GLWP allocation).
    pub const GUARANTEED: Self = Self(2);
    /// Authenticated traffic without (or beyond) a guarantee (Z-Lane's queue A).
    pub const AUTHENTICATED: Self = Self(3);
    /// Everything else: standard SCION traffic (Z-Lane's queue U).
    pub const UNAUTHENTICATED: Self = Self(4);

    /// The standard admissions and their labels (used in configs, metrics and logs).
    pub const STANDARD: [(Admission, &'static str); 5] = [
        (Self::RESERVED, "reserved"),
        (Self::NEIGHBOR, "neighbor"),
        (Self::GUARANTEED, "guaranteed"),
        (Self::AUTHENTICATED, "authenticated"),
        (Self::UNAUTHENTICATED, "unauthenticated"),
    ];
    /// The first id a mechanism may give an admission of its own.
    pub const FIRST_OWN: u8 = 8;
    /// Ids are below this.
    pub const LIMIT: usize = 32;

    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a class in the [`ClassTable`] of the egress link a packet is forwarded on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId(pub u8);

impl ClassId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// How a link chooses the class of its next transmission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinkPolicy {
    /// One queue in arrival order; classes only count. Queue bound: the sum of the classes'.
    Fifo,
    /// The first backlogged class in table order, up to its upper bound (if any).
    #[default]
    StrictPriority,
    /// Each class is served up to its lower bound first (in table order), never beyond its
    /// upper bound; what the lower bounds leave goes to the backlogged classes in table order
    /// (the Z-Lane paper's Table 2 semantics).
    BoundedShares,
}

/// How packets of one class wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueDiscipline {
    /// One FIFO per class.
    #[default]
    Fifo,
    /// Deficit round robin over the packets' sources (ISD-AS): one source flooding the class
    /// cannot starve the others in it; a full class drops from its longest source queue.
    FairPerSource,
}

/// A rate bound: absolute, or a share of the link's capacity (which can change at run time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateBound {
    Bps(u64),
    /// Parts per million of the link's capacity.
    Ppm(u32),
}

impl RateBound {
    pub const PPM: u32 = 1_000_000;

    /// A share written as a percentage (`"12.5%"`), in parts per million.
    pub fn parse_share(text: &str) -> Result<u32, ShareError> {
        let pct: f64 = text
            .strip_suffix('%')
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| ShareError::NotAPercentage(text.to_owned()))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(ShareError::OutOfRange(text.to_owned()));
        }
        Ok((pct * 10_000.0).round() as u32)
    }

    /// The bound in bit/s on a link of `capacity_bps` (rounded down).
    pub fn resolve(self, capacity_bps: u64) -> u64 {
        match self {
            RateBound::Bps(b) => b,
            RateBound::Ppm(p) => (u128::from(capacity_bps) * u128::from(p) / u128::from(Self::PPM)) as u64,
        }
    }
}

/// Why a written share cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ShareError {
    #[error("`{0}` is not a percentage like \"12.5%\"")]
    NotAPercentage(String),
    #[error("`{0}` is not between 0% and 100%")]
    OutOfRange(String),
}

/// One class of an egress link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClassSpec {
    pub name: String,
    /// Bound on the bytes waiting in this class.
    pub queue_bytes: usize,
    /// Served at least `min(offered, lower)` whenever the link is busy (`None`: no floor).
    pub lower: Option<RateBound>,
    /// Never served beyond this (`None`: up to the link's capacity).
    pub upper: Option<RateBound>,
    pub discipline: QueueDiscipline,
}

impl ClassSpec {
    pub fn new(name: impl Into<String>, queue_bytes: usize) -> Self {
        Self { name: name.into(), queue_bytes, lower: None, upper: None, discipline: QueueDiscipline::Fifo }
    }
}

/// Why a class table or classifier cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ClassError {
    #[error("a class table needs at least one class")]
    NoClasses,
    #[error("at most {max} classes per link, not {0}", max = ClassTable::MAX_CLASSES)]
    TooManyClasses(usize),
    #[error("class `{0}` appears twice")]
    DuplicateClass(String),
    #[error("class `{0}`: queue_bytes must be positive")]
    ZeroQueue(String),
    #[error("class `{0}`: lower bound above its upper bound")]
    LowerAboveUpper(String),
    #[error("class `{0}`: a share is at most 100%")]
    ShareAboveLink(String),
    #[error("the lower bounds' shares add up to more than 100% of the link")]
    LowerSharesExceedLink,
    #[error("admission `{admission}` is mapped to class `{class}`, which the table does not have")]
    UnknownClass { admission: String, class: String },
}

/// The classes of one egress link, in priority order (index = [`ClassId`]), and its policy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClassTable {
    policy: LinkPolicy,
    classes: Vec<ClassSpec>,
}

impl ClassTable {
    pub const MAX_CLASSES: usize = 16;

    pub fn new(policy: LinkPolicy, classes: Vec<ClassSpec>) -> Result<Self, ClassError> {
        if classes.is_empty() {
            return Err(ClassError::NoClasses);
        }
        if classes.len() > Self::MAX_CLASSES {
            return Err(ClassError::TooManyClasses(classes.len()));
        }
        let mut lower_ppm = 0u64;
        for (i, c) in classes.iter().enumerate() {
            if classes[..i].iter().any(|o| o.name == c.name) {
                return Err(ClassError::DuplicateClass(c.name.clone()));
            }
            if c.queue_bytes == 0 {
                return Err(ClassError::ZeroQueue(c.name.clone()));
            }
            for b in [c.lower, c.upper].into_iter().flatten() {
                if matches!(b, RateBound::Ppm(p) if p > RateBound::PPM) {
                    return Err(ClassError::ShareAboveLink(c.name.clone()));
                }
            }
            match (c.lower, c.upper) {
                (Some(RateBound::Bps(l)), Some(RateBound::Bps(u))) if l > u => {
                    return Err(ClassError::LowerAboveUpper(c.name.clone()))
                }
                (Some(RateBound::Ppm(l)), Some(RateBound::Ppm(u))) if l > u => {
                    return Err(ClassError::LowerAboveUpper(c.name.clone()))
                }
                _ => {}
            }
            if let Some(RateBound::Ppm(p)) = c.lower {
                lower_ppm += u64::from(p);
            }
        }
        if lower_ppm > u64::from(RateBound::PPM) {
            return Err(ClassError::LowerSharesExceedLink);
        }
        Ok(Self { policy, classes })
    }

    /// A plain router's link: reservation traffic strictly before best effort.
    pub fn priority_best_effort(priority_bytes: usize, best_effort_bytes: usize) -> Self {
        Self {
            policy: LinkPolicy::StrictPriority,
            classes: vec![ClassSpec::new("priority", priority_bytes), ClassSpec::new("best_effort", best_effort_bytes)],
        }
    }

    pub fn policy(&self) -> LinkPolicy {
        self.policy
    }
    pub fn classes(&self) -> &[ClassSpec] {
        &self.classes
    }
    pub fn len(&self) -> usize {
        self.classes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
    pub fn get(&self, id: ClassId) -> Option<&ClassSpec> {
        self.classes.get(id.index())
    }
    pub fn id_of(&self, name: &str) -> Option<ClassId> {
        self.classes.iter().position(|c| c.name == name).map(|i| ClassId(i as u8))
    }
}

/// The router's mapping from admissions to the classes of one link's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Classifier {
    class: [ClassId; Admission::LIMIT],
}

impl Classifier {
    /// Resolves, for every `(admission, label)` the router knows, the class that
    /// `class_of(label)` names in `table`. Admissions nobody declared fall in the last class.
    pub fn new<'a>(
        table: &ClassTable,
        admissions: impl IntoIterator<Item = (Admission, &'a str)>,
        class_of: impl Fn(&str) -> &'a str,
    ) -> Result<Self, ClassError> {
        let mut classifier = Self::reserved_first(table);
        for (a, label) in admissions {
            let name = class_of(label);
            let id = table
                .id_of(name)
                .ok_or_else(|| ClassError::UnknownClass { admission: label.to_owned(), class: name.to_owned() })?;
            if let Some(slot) = classifier.class.get_mut(a.index()) {
                *slot = id;
            }
        }
        Ok(classifier)
    }

    /// The classifier of a plain router: reservations in the table's first class, all else in
    /// its last.
    pub fn reserved_first(table: &ClassTable) -> Self {
        let last = ClassId((table.len().max(1) - 1) as u8);
        let mut class = [last; Admission::LIMIT];
        class[Admission::RESERVED.index()] = ClassId(0);
        Self { class }
    }

    #[inline]
    pub fn classify(&self, admission: Admission) -> ClassId {
        self.class.get(admission.index()).copied().unwrap_or(self.class[Admission::UNAUTHENTICATED.index()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlane_table() -> ClassTable {
        let share = |name: &str, ppm: u32, upper: bool| ClassSpec {
            lower: Some(RateBound::Ppm(ppm)),
            upper: upper.then_some(RateBound::Ppm(ppm)),
            ..ClassSpec::new(name, 64 * 1024)
        };
        ClassTable::new(
            LinkPolicy::BoundedShares,
            vec![
                share("R", 500_000, true),
                share("N", 100_000, true),
                share("G", 200_000, true),
                share("A", 150_000, false),
                share("U", 50_000, false),
            ],
        )
        .unwrap()
    }

    #[test]
    fn one_mechanism_admission_lands_in_each_routers_class() {
        let plain = ClassTable::priority_best_effort(1000, 1000);
        let zlane = zlane_table();
        let on_plain = Classifier::reserved_first(&plain);
        let zlane_names = |label: &str| match label {
            "reserved" => "R",
            "neighbor" => "N",
            "guaranteed" => "G",
            "authenticated" => "A",
            _ => "U",
        };
        let on_zlane = Classifier::new(&zlane, Admission::STANDARD, zlane_names).unwrap();
        let name = |t: &ClassTable, c: &Classifier, a| t.get(c.classify(a)).unwrap().name.clone();
        assert_eq!(name(&plain, &on_plain, Admission::RESERVED), "priority");
        assert_eq!(name(&plain, &on_plain, Admission::GUARANTEED), "best_effort");
        assert_eq!(name(&zlane, &on_zlane, Admission::RESERVED), "R");
        assert_eq!(name(&zlane, &on_zlane, Admission::NEIGHBOR), "N");
        assert_eq!(name(&zlane, &on_zlane, Admission::AUTHENTICATED), "A");
        // Undeclared and out-of-range admissions are treated as unauthenticated / last class.
        assert_eq!(name(&zlane, &on_zlane, Admission(200)), "U");
        assert_eq!(name(&plain, &on_plain, Admission(Admission::FIRST_OWN)), "best_effort");
        assert_eq!(
            Classifier::new(&plain, Admission::STANDARD, |_| "R"),
            Err(ClassError::UnknownClass { admission: "reserved".into(), class: "R".into() })
        );
        // A mechanism's own admission, mapped by its label.
        let own = (Admission(Admission::FIRST_OWN), "express");
        let c = Classifier::new(&zlane, [own], |_| "G").unwrap();
        assert_eq!(name(&zlane, &c, own.0), "G");
    }

    #[test]
    fn bad_tables_are_rejected_with_the_class_named() {
        let c = |n: &str| ClassSpec::new(n, 10);
        assert_eq!(ClassTable::new(LinkPolicy::Fifo, vec![]), Err(ClassError::NoClasses));
        assert_eq!(
            ClassTable::new(LinkPolicy::Fifo, vec![c("a"), c("a")]),
            Err(ClassError::DuplicateClass("a".into()))
        );
        let zero = ClassSpec { queue_bytes: 0, ..c("z") };
        assert_eq!(ClassTable::new(LinkPolicy::Fifo, vec![zero]), Err(ClassError::ZeroQueue("z".into())));
        let inverted = ClassSpec { lower: Some(RateBound::Bps(10)), upper: Some(RateBound::Bps(5)), ..c("i") };
        assert_eq!(
            ClassTable::new(LinkPolicy::BoundedShares, vec![inverted]),
            Err(ClassError::LowerAboveUpper("i".into()))
        );
        let half = |n: &str| ClassSpec { lower: Some(RateBound::Ppm(600_000)), ..c(n) };
        assert_eq!(
            ClassTable::new(LinkPolicy::BoundedShares, vec![half("x"), half("y")]),
            Err(ClassError::LowerSharesExceedLink)
        );
        assert!(ClassTable::new(LinkPolicy::Fifo, (0..17).map(|i| c(&i.to_string())).collect()).is_err());
    }

    #[test]
    fn shares_follow_the_capacity() {
        assert_eq!(RateBound::Ppm(200_000).resolve(10_000_000), 2_000_000);
        assert_eq!(RateBound::Ppm(1).resolve(999_999), 0);
        assert_eq!(RateBound::Bps(7).resolve(0), 7);
        assert_eq!(RateBound::Ppm(1_000_000).resolve(u64::MAX), u64::MAX);
    }

    #[test]
    fn shares_parse_as_percentages() {
        assert_eq!(RateBound::parse_share("12.5%"), Ok(125_000));
        assert_eq!(RateBound::parse_share("100%"), Ok(1_000_000));
        assert_eq!(RateBound::parse_share("half"), Err(ShareError::NotAPercentage("half".into())));
        assert_eq!(RateBound::parse_share("-1%"), Err(ShareError::OutOfRange("-1%".into())));
        assert_eq!(RateBound::parse_share("120%"), Err(ShareError::OutOfRange("120%".into())));
    }
}
