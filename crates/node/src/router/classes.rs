//! The router's traffic classes as configured: named class tables (`[class_table.NAME]`), the
//! table each interface uses (`interface[i].class_table`), and the classifier (`[classes]`)
//! mapping admission labels to class names.
//!
//! ```toml
//! [classes]                       # admission -> class; unnamed: reserved -> first class, rest -> last
//! reserved = "R"
//! neighbor = "N"
//! guaranteed = "G"
//! authenticated = "A"
//! unauthenticated = "U"
//!
//! [class_table.zlane]
//! policy = "bounded_shares"       # fifo | strict_priority | bounded_shares
//! class = [
//!   { name = "R", queue_bytes = 262144, lower = "50%", upper = "50%" },
//!   { name = "U", queue_bytes = 131072, lower = "5%", discipline = "fair_per_source" },
//! ]
//! ```
//! Without any `[class_table]`, every link has the plain table `default`: class `priority`
//! (bound `queues.priority_bytes`) strictly before `best_effort` (`queues.best_effort_bytes`).
//! On a Z-Lane router (one with `[zlane]`), `default` is instead the Z-Lane paper's Table 2
//! (R 50 %, N 10 %, G 20 % exactly; A 15 %, U 5 % at least; R, N, G with
//! `queues.priority_bytes` each, A, U with `queues.best_effort_bytes`), and `[classes]`
//! defaults to `reserved = "R"`, `neighbor = "N"`, `guaranteed = "G"`, `authenticated = "A"`,
//! `unauthenticated = "U"`. On a GLWP router (one with `[glwp]`) with only the plain table,
//! `[classes]` defaults to `guaranteed = "priority"`: GLWP's packets, policed by its monitors,
//! share the strict-priority class with Hummingbird's reservations, ahead of best effort.

use std::collections::BTreeMap;

use aviary_qos::{Admission, ClassSpec, ClassTable, Classifier, LinkPolicy, QueueDiscipline, RateBound};
use serde::{Deserialize, Serialize};

use aviary_zlane::classes::{table, RouterClass};

use crate::config::{ConfigError, QueueConfig};

/// The table of links that name none.
pub const DEFAULT_TABLE: &str = "default";
/// The first class of the plain `default` table.
pub const PLAIN_PRIORITY: &str = "priority";
/// The label of `Admission::GUARANTEED` in `[classes]`.
pub const GUARANTEED: &str = "guaranteed";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyConfig {
    Fifo,
    #[default]
    StrictPriority,
    BoundedShares,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisciplineConfig {
    #[default]
    Fifo,
    FairPerSource,
}

/// A rate bound as written: bit/s (`2000000`) or a share of the link's capacity (`"12.5%"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BoundConfig {
    Bps(u64),
    Share(String),
}

impl BoundConfig {
    fn resolve(&self) -> Result<RateBound, String> {
        match self {
            BoundConfig::Bps(b) => Ok(RateBound::Bps(*b)),
            BoundConfig::Share(s) => RateBound::parse_share(s).map(RateBound::Ppm).map_err(|e| e.to_string()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    pub name: String,
    pub queue_bytes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<BoundConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<BoundConfig>,
    #[serde(default)]
    pub discipline: DisciplineConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassTableConfig {
    #[serde(default)]
    pub policy: PolicyConfig,
    pub class: Vec<ClassConfig>,
}

impl ClassTableConfig {
    /// The table, or an error naming the field below `at` (e.g. `class_table.zlane`).
    pub fn build(&self, file: &str, at: &str) -> Result<ClassTable, ConfigError> {
        let mut classes = Vec::with_capacity(self.class.len());
        for (i, c) in self.class.iter().enumerate() {
            let bound = |b: &Option<BoundConfig>, name: &str| {
                b.as_ref()
                    .map(|b| b.resolve())
                    .transpose()
                    .map_err(|e| ConfigError::new(file, format!("{at}.class[{i}].{name}"), e))
            };
            classes.push(ClassSpec {
                name: c.name.clone(),
                queue_bytes: c.queue_bytes,
                lower: bound(&c.lower, "lower")?,
                upper: bound(&c.upper, "upper")?,
                discipline: match c.discipline {
                    DisciplineConfig::Fifo => QueueDiscipline::Fifo,
                    DisciplineConfig::FairPerSource => QueueDiscipline::FairPerSource,
                },
            });
        }
        let policy = match self.policy {
            PolicyConfig::Fifo => LinkPolicy::Fifo,
            PolicyConfig::StrictPriority => LinkPolicy::StrictPriority,
            PolicyConfig::BoundedShares => LinkPolicy::BoundedShares,
        };
        ClassTable::new(policy, classes).map_err(|e| ConfigError::new(file, format!("{at}.class"), e.to_string()))
    }
}

/// The class tables of a router, by name, with the `default` table filled in: the plain one,
/// or Table 2 on a Z-Lane router.
pub fn tables(
    file: &str,
    configured: &BTreeMap<String, ClassTableConfig>,
    queues: &QueueConfig,
    zlane: bool,
) -> Result<BTreeMap<String, ClassTable>, ConfigError> {
    let mut out = BTreeMap::new();
    let default = if zlane {
        table::default_table(queues.priority_bytes, queues.best_effort_bytes)
            .map_err(|e| ConfigError::new(file, "queues", e.to_string()))?
    } else {
        ClassTable::priority_best_effort(queues.priority_bytes, queues.best_effort_bytes)
    };
    out.insert(DEFAULT_TABLE.to_owned(), default);
    for (name, t) in configured {
        out.insert(name.clone(), t.build(file, &format!("class_table.{name}"))?);
    }
    Ok(out)
}

/// A Z-Lane router's default `[classes]`: each standard admission to its queue of Table 2.
pub fn zlane_mapping() -> BTreeMap<String, String> {
    Admission::STANDARD.iter().map(|(_, l)| (l.to_string(), RouterClass::of_label(l).name().to_owned())).collect()
}

/// The bound of the class `mapping` sends guaranteed traffic to in `table` (its upper bound,
/// else its lower one): μ_G.
pub fn guaranteed_bound(table: &ClassTable, mapping: &BTreeMap<String, String>) -> Option<RateBound> {
    let (_, label) = Admission::STANDARD.iter().find(|(a, _)| *a == Admission::GUARANTEED)?;
    let class = table.get(table.id_of(mapping.get(*label)?)?)?;
    class.upper.or(class.lower)
}

/// The classifier of one link: `[classes]` resolved in its table, for every admission the
/// router's mechanisms may forward with. An admission `[classes]` does not name keeps the plain
/// mapping (reserved to the first class, everything else to the last).
pub fn classifier<'a>(
    file: &str,
    table_name: &str,
    table: &ClassTable,
    mapping: &BTreeMap<String, String>,
    admissions: impl IntoIterator<Item = (Admission, &'a str)>,
) -> Result<Classifier, ConfigError> {
    let known: Vec<(Admission, &str)> = admissions.into_iter().collect();
    if let Some(label) = mapping.keys().find(|l| !known.iter().any(|(_, k)| k == l)) {
        let all: Vec<&str> = known.iter().map(|(_, k)| *k).collect();
        return Err(ConfigError::new(
            file,
            format!("classes.{label}"),
            format!("no mechanism of this router forwards with admission `{label}` (known: {})", all.join(", ")),
        ));
    }
    let named = known.iter().filter(|(_, l)| mapping.contains_key(*l)).map(|&(a, l)| (a, l));
    Classifier::new(table, named, |label| mapping.get(label).map_or("", String::as_str)).map_err(|e| {
        let field = match &e {
            aviary_qos::ClassError::UnknownClass { admission, .. } => format!("classes.{admission}"),
            _ => "classes".to_owned(),
        };
        ConfigError::new(file, field, format!("{e} (class table `{table_name}`)"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<ClassTable, ConfigError> {
        let t: ClassTableConfig = toml::from_str(text).unwrap();
        t.build("r.toml", "class_table.t")
    }

    #[test]
    fn shares_and_rates_parse_and_bad_ones_name_the_field() {
        let t = table(
            "policy = \"bounded_shares\"\nclass = [{ name = \"R\", queue_bytes = 10, lower = \"12.5%\", upper = 3000 }, \
             { name = \"U\", queue_bytes = 10, discipline = \"fair_per_source\" }]",
        )
        .unwrap();
        assert_eq!(t.policy(), LinkPolicy::BoundedShares);
        assert_eq!(t.classes()[0].lower, Some(RateBound::Ppm(125_000)));
        assert_eq!(t.classes()[0].upper, Some(RateBound::Bps(3000)));
        assert_eq!(t.classes()[1].discipline, QueueDiscipline::FairPerSource);
        let e = table("class = [{ name = \"R\", queue_bytes = 10, lower = \"half\" }]").unwrap_err();
        assert_eq!(e.field, "class_table.t.class[0].lower");
        let e = table("class = [{ name = \"R\", queue_bytes = 10, upper = \"120%\" }]").unwrap_err();
        assert_eq!(e.field, "class_table.t.class[0].upper");
        let e = table("class = [{ name = \"R\", queue_bytes = 0 }]").unwrap_err();
        assert!(e.to_string().contains("queue_bytes"), "{e}");
    }

    #[test]
    fn classifier_names_unknown_admissions_and_classes() {
        let plain = ClassTable::priority_best_effort(10, 10);
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(a, c)| (a.to_string(), c.to_string())).collect();
        let c =
            classifier("r.toml", "default", &plain, &map(&[("guaranteed", "priority")]), Admission::STANDARD).unwrap();
        assert_eq!(c.classify(Admission::GUARANTEED), aviary_qos::ClassId(0));
        assert_eq!(c.classify(Admission::RESERVED), aviary_qos::ClassId(0));
        assert_eq!(c.classify(Admission::AUTHENTICATED), aviary_qos::ClassId(1));
        let e = classifier("r.toml", "default", &plain, &map(&[("reserved", "R")]), Admission::STANDARD).unwrap_err();
        assert_eq!(e.field, "classes.reserved");
        assert!(e.to_string().contains("`default`"), "{e}");
        let e =
            classifier("r.toml", "default", &plain, &map(&[("expres", "priority")]), Admission::STANDARD).unwrap_err();
        assert_eq!(e.field, "classes.expres");
    }
}
