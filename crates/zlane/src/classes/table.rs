//! The egress scheduler's classes on a Z-Lane router: the paper's Table 2 as the default.
//!
//! R, N and G are served exactly up to their bound (lower = upper bound), A and U at least up
//! to theirs; what R, N and G leave unused goes to A, then U ([`LinkPolicy::BoundedShares`]).
//! The example bounds: R 50 %, N 10 %, G 20 %, A 15 %, U 5 % of the egress capacity.

use aviary_qos::{ClassError, ClassSpec, ClassTable, LinkPolicy, RateBound};

use super::RouterClass;

/// Table 2's example bounds in parts per million of the egress capacity, and whether the
/// bound is also an upper bound.
pub const TABLE_2: [(RouterClass, u32, bool); 5] = [
    (RouterClass::Reservation, 500_000, true),
    (RouterClass::Neighbor, 100_000, true),
    (RouterClass::Guaranteed, 200_000, true),
    (RouterClass::Authenticated, 150_000, false),
    (RouterClass::Unauthenticated, 50_000, false),
];

/// μ_G of the default table.
pub const DEFAULT_MU_G: RateBound = RateBound::Ppm(TABLE_2[2].1);

/// The default class table of a Z-Lane router's links: the preferential classes R, N, G with
/// queues of `preferential_bytes`, the best-effort classes A, U with `best_effort_bytes`.
pub fn default_table(preferential_bytes: usize, best_effort_bytes: usize) -> Result<ClassTable, ClassError> {
    let classes = TABLE_2
        .iter()
        .map(|&(class, ppm, upper)| ClassSpec {
            lower: Some(RateBound::Ppm(ppm)),
            upper: upper.then_some(RateBound::Ppm(ppm)),
            ..ClassSpec::new(class.name(), if upper { preferential_bytes } else { best_effort_bytes })
        })
        .collect();
    ClassTable::new(LinkPolicy::BoundedShares, classes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_qos::{Admission, Classifier};

    #[test]
    fn the_default_table_is_table_2_and_standard_admissions_land_in_their_queue() {
        let t = default_table(1000, 2000).unwrap();
        let names: Vec<_> = t.classes().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["R", "N", "G", "A", "U"]);
        let lowers: u32 = t
            .classes()
            .iter()
            .map(|c| match c.lower {
                Some(RateBound::Ppm(p)) => p,
                _ => 0,
            })
            .sum();
        assert_eq!(lowers, RateBound::PPM, "the example uses the whole link");
        assert_eq!(t.get(t.id_of("G").unwrap()).unwrap().upper, Some(DEFAULT_MU_G));
        assert_eq!(t.get(t.id_of("A").unwrap()).unwrap().upper, None);
        assert_eq!(t.get(t.id_of("U").unwrap()).unwrap().queue_bytes, 2000);
        let c = Classifier::new(&t, Admission::STANDARD, |l| RouterClass::of_label(l).name()).unwrap();
        for class in RouterClass::ALL {
            assert_eq!(t.get(c.classify(class.admission())).unwrap().name, class.name());
        }
    }
}
