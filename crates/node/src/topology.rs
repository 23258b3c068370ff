//! Topology files: ISDs, ASes, inter-AS links with capacity and delay, and hosts.
//!
//! A topology is public knowledge (which ASes exist and how they are linked); secrets and
//! addresses live in the per-process configs that `aviary run` derives from it.
//!
//! ```toml
//! name = "line5"
//! [[as]]
//! ia = "1-ff00:0:110"
//! core = true
//! [[link]]
//! a = "1-ff00:0:110#2"   # ISD-AS#interface
//! b = "1-ff00:0:112#1"
//! kind = "parent"        # a is b's parent; or "core" between two core ASes
//! capacity_bps = 10_000_000
//! delay_ms = 2.0
//! [[host]]
//! name = "src"
//! ia = "1-ff00:0:111"
//! ```
//!
//! An AS's router may differ from the defaults: `[as.router.hummingbird]`, `[as.router.classes]`,
//! `[as.router.class_table.NAME]` are the router config's tables of the same names, and
//! `as.router.link_class_table` names the class table of all its inter-AS links, and
//! `[as.router.zlane]` makes it a Z-Lane router (its guarantees default to an equal share for
//! every AS of its ISD and every other ISD of the topology). `[as.router.pathval]` (`role`,
//! `attack`, `[[as.router.pathval.route]]`) makes it a pathval router; the topology's tables
//! are checked as a whole ([`aviary_pathval::plan`]) and the runner fills in each trusted
//! router's upstream and next trusted nodes.
//!
//! `[as.zlane_gateway]` starts a Z-Lane gateway for the AS (the table is the gateway's
//! `[zlane_gateway]`, see `aviary_zlane::gateway::config`); its hosts then send their per-AS
//! EPIC packets to it. The AS's router must be a Z-Lane router. A `prefix` of its
//! `[[as.zlane_gateway.hosts]]` may name a host of the AS (`prefix = "protected"`), which the
//! runner replaces with the address it gives that host.
//!
//! `[as.drkey]` (`epoch_duration_s`, `grace_s`; default SCION's one day and 5 s) are the AS's
//! DRKey epochs: the runner writes them into the AS's control service (`[drkey]`), router and
//! Z-Lane gateway (`[drkey_epochs]`), which must all derive the AS's keys in the same epochs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use aviary_zlane::classes::ZlaneConfig;
use aviary_zlane::gateway::GatewayConfig;
use std::path::Path;

use aviary_hummingbird::RouterParams;
use aviary_pathval::{PathvalConfig, PlanAs, TrustedPlan};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use crate::config::DrkeyEpochs;
use crate::control::glwp::config::GlwpConfig;
use crate::router::classes::ClassTableConfig;

/// A topology or config that cannot be used, with the file and field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(file: impl fmt::Display, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.to_string(), field: field.into(), message: message.into() }
    }
}

/// Reads and parses a TOML file; parse errors name the file and the offending key.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new(&file, "(file)", e.to_string()))?;
    toml::from_str(&text).map_err(|e| {
        let field = e.span().map(|s| key_at(&text, s.start)).unwrap_or_else(|| "(document)".into());
        ConfigError::new(&file, field, e.message().to_string())
    })
}

/// The `key` or `[table]` on the line where a TOML error starts, for the message.
fn key_at(text: &str, offset: usize) -> String {
    let line_start = text[..offset.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("").trim();
    let key = line.split('=').next().unwrap_or(line).trim();
    format!("line {line_no} `{key}`")
}

/// An interface of an AS, written `ISD-AS#ifid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IfRef {
    pub ia: IsdAsn,
    pub ifid: u16,
}

impl fmt::Display for IfRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.ia, self.ifid)
    }
}

impl std::str::FromStr for IfRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (ia, ifid) = s.split_once('#').ok_or_else(|| format!("`{s}` is not of the form ISD-AS#interface"))?;
        let ia = ia.parse::<IsdAsn>().map_err(|e| format!("`{ia}`: {e}"))?;
        let ifid = ifid.parse::<u16>().map_err(|_| format!("`{ifid}` is not an interface id (1-65535)"))?;
        if ifid == 0 {
            return Err("interface id 0 is reserved for the AS's inside".into());
        }
        Ok(Self { ia, ifid })
    }
}

impl<'de> Deserialize<'de> for IfRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for IfRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// `a` is `b`'s parent (provider).
    Parent,
    /// Between two core ASes.
    Core,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsEntry {
    pub ia: IsdAsn,
    #[serde(default)]
    pub core: bool,
    /// How this AS's border router differs from the defaults; `aviary run` composes it into the
    /// AS's router config (and the Hummingbird codec and ResID bound into its control service's).
    #[serde(default, skip_serializing_if = "RouterSettings::is_default")]
    pub router: RouterSettings,
    /// Starts a Z-Lane gateway for this AS with this `[zlane_gateway]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zlane_gateway: Option<GatewayConfig>,
    /// Runs a GLWP service in the AS's control service with this `[glwp]` table (without
    /// `listen`, which the runner assigns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glwp: Option<GlwpConfig>,
    /// The AS's DRKey epochs, one statement for all its processes (see the module doc).
    #[serde(default, skip_serializing_if = "DrkeyEpochs::is_default")]
    pub drkey: DrkeyEpochs,
}

/// The per-mechanism tables and the traffic classes of one AS's router, as a topology states
/// them: the same tables as in the router config (`docs/network.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSettings {
    /// The router's `[hummingbird]` table.
    #[serde(default)]
    pub hummingbird: RouterParams,
    /// The router's `[classes]`: admission label to class name.
    #[serde(default)]
    pub classes: BTreeMap<String, String>,
    /// The router's `[class_table.NAME]` tables.
    #[serde(default)]
    pub class_table: BTreeMap<String, ClassTableConfig>,
    /// The class table of every inter-AS link of this AS (default: `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_class_table: Option<String>,
    /// The router's `[zlane]` table; with `ases` and `isds` both empty, the runner lists every
    /// AS of the router's ISD and every other ISD of the topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zlane: Option<ZlaneConfig>,
    /// The router's `[pathval]` table without `upstream` and `next`, which [`Topology::pathval_plan`]
    /// works out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pathval: Option<PathvalConfig>,
}

impl RouterSettings {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Topology {
    /// The `[zlane]` table of `ia`'s router: as the topology states it, its universe of
    /// origins filled in from the topology if it lists none.
    pub fn zlane_config(&self, ia: IsdAsn, settings: &RouterSettings) -> Option<ZlaneConfig> {
        let mut z = settings.zlane.clone()?;
        if z.ases.is_empty() && z.isds.is_empty() {
            z.ases = self.ases.iter().map(|a| a.ia).filter(|a| a.isd() == ia.isd()).collect();
            let isds: BTreeSet<u16> = self.ases.iter().map(|a| a.ia.isd()).filter(|i| *i != ia.isd()).collect();
            z.isds = isds.into_iter().collect();
        }
        Some(z)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub a: IfRef,
    pub b: IfRef,
    pub kind: LinkKind,
    /// Capacity in each direction, bit/s.
    pub capacity_bps: u64,
    /// One-way propagation delay.
    #[serde(default)]
    pub delay_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    pub ia: IsdAsn,
}

/// A validated topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "as")]
    pub ases: Vec<AsEntry>,
    #[serde(rename = "link", default)]
    pub links: Vec<Link>,
    #[serde(rename = "host", default)]
    pub hosts: Vec<Host>,
}

/// One end of a link as seen from an AS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neighbor {
    Parent,
    Child,
    Core,
}

impl Topology {
    /// Reads and validates a topology file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let topo: Topology = read_toml(path)?;
        topo.validate(&path.display().to_string())?;
        Ok(topo)
    }

    pub fn validate(&self, file: &str) -> Result<(), ConfigError> {
        let err = |field: String, msg: String| ConfigError::new(file, field, msg);
        if self.ases.is_empty() {
            return Err(err("as".into(), "a topology needs at least one AS".into()));
        }
        let mut cores = BTreeMap::new();
        for (i, a) in self.ases.iter().enumerate() {
            if cores.insert(a.ia, a.core).is_some() {
                return Err(err(format!("as[{i}].ia"), format!("{} is listed twice", a.ia)));
            }
            a.drkey.schedule(file, &format!("as[{i}].drkey"))?;
        }
        let mut used = BTreeSet::new();
        for (i, l) in self.links.iter().enumerate() {
            for (end, r) in [("a", l.a), ("b", l.b)] {
                let field = format!("link[{i}].{end}");
                let Some(&core) = cores.get(&r.ia) else {
                    return Err(err(field, format!("{} is not an AS of this topology", r.ia)));
                };
                if !used.insert(r) {
                    return Err(err(field, format!("interface {r} is used by two links")));
                }
                let ok = match (l.kind, end) {
                    (LinkKind::Core, _) => core,
                    (LinkKind::Parent, "b") => !core,
                    (LinkKind::Parent, _) => true,
                };
                if !ok {
                    let what = if l.kind == LinkKind::Core {
                        "a core link needs core ASes"
                    } else {
                        "a core AS has no parent"
                    };
                    return Err(err(field, format!("{what} ({} is {}core)", r.ia, if core { "" } else { "not " })));
                }
            }
            if l.a.ia == l.b.ia {
                return Err(err(format!("link[{i}].b"), "a link joins two different ASes".into()));
            }
            if l.capacity_bps == 0 {
                return Err(err(format!("link[{i}].capacity_bps"), "must be positive".into()));
            }
            if !(0.0..=10_000.0).contains(&l.delay_ms) {
                return Err(err(format!("link[{i}].delay_ms"), "must be between 0 and 10000".into()));
            }
        }
        for a in self.ases.iter().filter(|a| !a.core) {
            if !self.links.iter().any(|l| l.kind == LinkKind::Parent && l.b.ia == a.ia) {
                let i = self.ases.iter().position(|x| x.ia == a.ia).unwrap_or(0);
                return Err(err(format!("as[{i}]"), format!("non-core AS {} has no parent link", a.ia)));
            }
        }
        self.pathval_plan(file)?;
        for (i, a) in self.ases.iter().enumerate() {
            if a.zlane_gateway.is_some() && a.router.zlane.is_none() {
                let why = "a Z-Lane gateway needs a Z-Lane router in its AS (an [as.router.zlane] table)";
                return Err(err(format!("as[{i}].zlane_gateway"), why.into()));
            }
        }
        for (i, a) in self.ases.iter().enumerate() {
            self.check_glwp(file, i, a)?;
        }
        let mut names = BTreeSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let valid = !h.name.is_empty() && h.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid {
                return Err(err(format!("host[{i}].name"), "use letters, digits, '-' and '_'".into()));
            }
            if !names.insert(&h.name) {
                return Err(err(format!("host[{i}].name"), format!("`{}` is used twice", h.name)));
            }
            if !cores.contains_key(&h.ia) {
                return Err(err(format!("host[{i}].ia"), format!("{} is not an AS of this topology", h.ia)));
            }
        }
        Ok(())
    }

    /// The pathval plan of the ASes with a `[as.router.pathval]` table: every trusted router's
    /// upstream and next trusted nodes, or the AS and field where the tables fail (an
    /// unreachable destination, a loop, an ambiguous next trusted node).
    pub fn pathval_plan(&self, file: &str) -> Result<BTreeMap<IsdAsn, TrustedPlan>, ConfigError> {
        let mut network = Vec::new();
        for (i, a) in self.ases.iter().enumerate() {
            let Some(p) = &a.router.pathval else { continue };
            if !p.upstream.is_empty() || !p.next.is_empty() {
                let msg = "worked out from the routes; a topology does not state it";
                let field = if p.upstream.is_empty() { "next" } else { "upstream" };
                return Err(ConfigError::new(file, format!("as[{i}].router.pathval.{field}"), msg));
            }
            let links = self.links_of(a.ia).map(|(l, r, ..)| (l.ifid, r.ia, r.ifid)).collect();
            network.push(PlanAs { ia: a.ia, role: p.role, routes: &p.routes, links });
        }
        aviary_pathval::plan(&network).map_err(|e| {
            let i = self.ases.iter().position(|a| a.ia == e.ia).unwrap_or(0);
            ConfigError::new(file, format!("as[{i}].router.pathval.{}", e.field), e.message)
        })
    }

    /// The `[as.glwp]` table of `as[i]`: a valid table whose divergents and convergents stay
    /// within the capacity of each interface's link, so that allocations never congest a link.
    fn check_glwp(&self, file: &str, i: usize, a: &AsEntry) -> Result<(), ConfigError> {
        let Some(g) = &a.glwp else { return Ok(()) };
        let prefix = format!("as[{i}].glwp");
        if g.listen.is_some() {
            return Err(ConfigError::new(
                file,
                format!("{prefix}.listen"),
                "the runner assigns it; a topology does not state it",
            ));
        }
        let links: Vec<(u16, u64)> = self.links_of(a.ia).map(|(l, _, _, link)| (l.ifid, link.capacity_bps)).collect();
        let ids: Vec<u16> = links.iter().map(|l| l.0).collect();
        let plan = g.plan(file, &prefix, &ids)?;
        glwp_within_capacity(file, &format!("{prefix}.matrix"), &plan.matrix, &links)
    }

    pub fn as_entry(&self, ia: IsdAsn) -> Option<&AsEntry> {
        self.ases.iter().find(|a| a.ia == ia)
    }

    pub fn is_core(&self, ia: IsdAsn) -> bool {
        self.as_entry(ia).is_some_and(|a| a.core)
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The links of `ia`: (local interface, remote interface, what the neighbour is, link).
    pub fn links_of(&self, ia: IsdAsn) -> impl Iterator<Item = (IfRef, IfRef, Neighbor, &Link)> {
        self.links.iter().filter_map(move |l| {
            if l.a.ia == ia {
                let n = if l.kind == LinkKind::Core { Neighbor::Core } else { Neighbor::Child };
                Some((l.a, l.b, n, l))
            } else if l.b.ia == ia {
                let n = if l.kind == LinkKind::Core { Neighbor::Core } else { Neighbor::Parent };
                Some((l.b, l.a, n, l))
            } else {
                None
            }
        })
    }

    /// The link at interface `r`, if any: (remote interface, what the neighbour is).
    pub fn neighbor(&self, r: IfRef) -> Option<(IfRef, Neighbor)> {
        self.links_of(r.ia).find(|(l, ..)| *l == r).map(|(_, remote, n, _)| (remote, n))
    }
}

/// GLWP's matrix `m` of an AS whose links are `(interface, capacity)`: every divergent and
/// convergent within its link's capacity, so that allocations never congest a link.
pub fn glwp_within_capacity(
    file: &str,
    field: &str,
    m: &aviary_glwp::AllocationMatrix,
    links: &[(u16, u64)],
) -> Result<(), ConfigError> {
    for &(ifid, capacity) in links {
        for (what, bps) in [("divergent", m.divergent_bps(ifid)), ("convergent", m.convergent_bps(ifid))] {
            if bps > capacity {
                let msg = format!(
                    "the {what} of interface {ifid} is {bps} bit/s, above its link's capacity of {capacity} bit/s"
                );
                return Err(ConfigError::new(file, field, msg));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Topology, ConfigError> {
        let t: Topology = toml::from_str(text).map_err(|e| ConfigError::new("t.toml", "?", e.to_string()))?;
        t.validate("t.toml")?;
        Ok(t)
    }

    const BASE: &str = r#"
name = "t"
[[as]]
ia = "1-ff00:0:110"
core = true
[[as]]
ia = "1-ff00:0:111"
[[link]]
a = "1-ff00:0:110#1"
b = "1-ff00:0:111#1"
kind = "parent"
capacity_bps = 1000
"#;

    #[test]
    fn shipped_topologies_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let t = Topology::load(&e.unwrap().path()).unwrap();
            assert!(!t.hosts.is_empty());
            n += 1;
        }
        assert!(n >= 2);
    }

    #[test]
    fn neighbours_seen_from_both_ends() {
        let t = parse(BASE).unwrap();
        let (remote, n) = t.neighbor("1-ff00:0:111#1".parse().unwrap()).unwrap();
        assert_eq!((remote.to_string().as_str(), n), ("1-ff00:0:110#1", Neighbor::Parent));
        let (_, n) = t.neighbor("1-ff00:0:110#1".parse().unwrap()).unwrap();
        assert_eq!(n, Neighbor::Child);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (BASE.replace("111#1\"\nkind", "112#1\"\nkind"), "link[0].b"),
            (BASE.replace("capacity_bps = 1000", "capacity_bps = 0"), "link[0].capacity_bps"),
            (BASE.replace("kind = \"parent\"", "kind = \"core\""), "link[0].b"),
            (BASE.replace("110#1\"\nb", "110#0\"\nb"), "?"),
            (format!("{BASE}[[host]]\nname = \"h\"\nia = \"1-ff00:0:999\"\n"), "host[0].ia"),
            (format!("{BASE}[[host]]\nname = \"h h\"\nia = \"1-ff00:0:111\"\n"), "host[0].name"),
            (format!("{BASE}[[as]]\nia = \"1-ff00:0:111\"\n"), "as[2].ia"),
            (format!("{BASE}[[as]]\nia = \"1-ff00:0:112\"\n"), "as[2]"),
        ];
        for (text, field) in cases {
            let e = parse(&text).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn an_ass_drkey_epochs_are_checked_and_default_to_scions() {
        use aviary_scion::drkey::EpochSchedule;
        // `[as.drkey]` after AS 1-ff00:0:111's entry belongs to it.
        let with = |table: &str| {
            BASE.replace("ia = \"1-ff00:0:111\"\n", &format!("ia = \"1-ff00:0:111\"\n[as.drkey]\n{table}\n"))
        };
        let t = parse(&with("epoch_duration_s = 3600")).unwrap();
        assert_eq!(t.ases[0].drkey, DrkeyEpochs::default());
        assert_eq!(t.ases[1].drkey.schedule("t", "drkey").unwrap(), EpochSchedule::new(3600, 5).unwrap());
        assert_eq!(t.ases[0].drkey.schedule("t", "drkey").unwrap(), EpochSchedule::SCION_DEFAULT);
        let e = parse(&with("epoch_duration_s = 0")).unwrap_err();
        assert_eq!((e.file.as_str(), e.field.as_str()), ("t.toml", "as[1].drkey.epoch_duration_s"), "{e}");
        let e = parse(&with("epoch_duration_s = 600\ngrace_s = 600")).unwrap_err();
        assert_eq!(e.field, "as[1].drkey.grace_s", "{e}");
        let e = parse(&with("duration_s = 600")).unwrap_err();
        assert!(e.message.contains("duration_s"), "an unknown field is refused: {e}");
    }

    #[test]
    fn pathval_tables_are_checked_as_a_whole() {
        let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/pathval.toml");
        let text = std::fs::read_to_string(&f).unwrap();
        let t = parse(&text).unwrap();
        let plan = t.pathval_plan("t.toml").unwrap();
        // The trusted router with two alternatives proves itself to a different node on each.
        let t112 = &plan[&"1-ff00:0:112".parse().unwrap()];
        let nodes: BTreeSet<String> = t112.next.iter().map(|n| n.node.to_string()).collect();
        assert_eq!(nodes.len(), 2, "{t112:?}");
        // Removing the untrusted AS's route leaves the destination unreachable through it.
        let broken = text.replacen("dst = \"1-ff00:0:115\"\nvia = [2]", "dst = \"1-ff00:0:111\"\nvia = [1]", 1);
        assert_ne!(broken, text);
        let e = parse(&broken).unwrap_err();
        assert!(e.field.starts_with("as[") && e.field.contains("router.pathval"), "{e}");
        // A route on an interface the AS does not have.
        let e = parse(&text.replacen("via = [2, 3]", "via = [2, 9]", 1)).unwrap_err();
        assert!(e.field.ends_with("router.pathval.route[0].via"), "{e}");
    }

    #[test]
    fn glwp_tables_are_checked_against_the_links() {
        // `[as.glwp]` after AS 1-ff00:0:111's entry belongs to it.
        let with = |table: &str| {
            BASE.replace("capacity_bps = 1000", "capacity_bps = 100_000_000")
                .replace("ia = \"1-ff00:0:111\"\n", &format!("ia = \"1-ff00:0:111\"\n[as.glwp]\n{table}\n"))
        };
        parse(&with("matrix = [[0, 1, 50_000_000], [1, 0, 50_000_000]]")).unwrap();
        let cases = [
            ("matrix = [[0, 2, 5]]", "as[1].glwp.matrix[0]"),
            ("matrix = [[0, 1, 110_000_000], [1, 0, 50_000_000]]", "as[1].glwp.matrix"),
            ("matrix = [[0, 1, 5]]\nlisten = \"127.0.0.1:1\"", "as[1].glwp.listen"),
            ("matrix = [[0, 1, 5]]\nburst_bytes = 1", "as[1].glwp.burst_bytes"),
        ];
        for (table, field) in cases {
            let e = parse(&with(table)).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn toml_errors_name_file_and_line() {
        let dir = aviary_scratch::ScratchDir::new("topo");
        let f = dir.join("bad.toml");
        std::fs::write(&f, BASE.replace("capacity_bps = 1000", "capacity_bps = \"fast\"")).unwrap();
        let e = Topology::load(&f).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("capacity_bps"), "{e}");
    }
}
