//! The input file of `aviary lab gma`: ASes with allocation matrices, links, and optionally the
//! paths to allocate. Every error names the field it is about, as `nodes.1-ff00:0:110.M[3]`,
//! `links[2]` or `paths[0].hops[1]`.

use std::collections::BTreeMap;

use aviary_glwp::{
    AllocationMatrix, Hop, InterfaceId, Link, MatrixEntry, MatrixError, PathError, Topology, TopologyError,
};
use aviary_scion::{IaParseError, IsdAsn};
use serde_json::{Map, Value};
use thiserror::Error;

/// What is wrong with one field of the input.
#[derive(Debug, Error)]
pub enum Problem {
    #[error("expected {0}")]
    Expected(&'static str),
    #[error("unknown field {0:?}")]
    UnknownField(String),
    #[error(transparent)]
    IsdAsn(#[from] IaParseError),
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("the same id as paths[{first}]")]
    DuplicateId { first: usize },
    #[error("the same hops as paths[{first}]")]
    DuplicatePath { first: usize },
}

/// A [`Problem`] at a field, e.g. `nodes.1-ff00:0:110.M[3]`.
#[derive(Debug, Error)]
#[error("{field}: {problem}")]
pub struct FieldError {
    pub field: String,
    pub problem: Problem,
}

fn at(field: impl Into<String>, problem: impl Into<Problem>) -> FieldError {
    FieldError { field: field.into(), problem: problem.into() }
}

/// A parsed input: the topology and, if the file lists them, the paths with their ids.
#[derive(Debug)]
pub struct GmaInput {
    pub topology: Topology,
    pub paths: Option<Vec<(String, Vec<Hop>)>>,
}

fn object<'a>(v: &'a Value, field: &str, keys: &[&str]) -> Result<&'a Map<String, Value>, FieldError> {
    let map = v.as_object().ok_or_else(|| at(field, Problem::Expected("an object")))?;
    if let Some(k) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(at(field, Problem::UnknownField(k.clone())));
    }
    Ok(map)
}

fn tuple<'a>(v: &'a Value, field: &str, len: usize, what: &'static str) -> Result<&'a [Value], FieldError> {
    match v.as_array() {
        Some(a) if a.len() == len => Ok(a),
        _ => Err(at(field, Problem::Expected(what))),
    }
}

fn interface(v: &Value, field: &str) -> Result<InterfaceId, FieldError> {
    v.as_u64()
        .and_then(|i| InterfaceId::try_from(i).ok())
        .ok_or_else(|| at(field, Problem::Expected("an interface id from 0 to 65535")))
}

fn isd_asn(v: &Value, field: &str) -> Result<IsdAsn, FieldError> {
    let s = v.as_str().ok_or_else(|| at(field, Problem::Expected("an ISD-AS such as \"1-ff00:0:110\"")))?;
    s.parse().map_err(|e: IaParseError| at(field, e))
}

/// Why a text is no input; errors name the field but not the file.
#[derive(Debug, Error)]
pub enum InputError {
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Field(#[from] FieldError),
}

/// Parses the input text.
pub fn parse(text: &str) -> Result<GmaInput, InputError> {
    let root: Value = serde_json::from_str(text)?;
    Ok(parse_value(&root)?)
}

fn parse_value(root: &Value) -> Result<GmaInput, FieldError> {
    let root = object(root, "(top level)", &["nodes", "links", "paths"])?;

    let nodes_value = root.get("nodes").ok_or_else(|| at("nodes", Problem::Expected("an object of ASes")))?;
    let nodes_map = nodes_value.as_object().ok_or_else(|| at("nodes", Problem::Expected("an object of ASes")))?;
    // Per AS: its key in the file (for field names) and its entries as listed.
    let mut listed: BTreeMap<IsdAsn, (String, Vec<MatrixEntry>)> = BTreeMap::new();
    let mut nodes = Vec::new();
    for (key, node) in nodes_map {
        let field = format!("nodes.{key}");
        let ia: IsdAsn = key.parse().map_err(|e: IaParseError| at(&field, e))?;
        let node = object(node, &field, &["M"])?;
        let m_field = format!("{field}.M");
        let rows = node
            .get("M")
            .and_then(Value::as_array)
            .ok_or_else(|| at(&m_field, Problem::Expected("an array of [in, out, value]")))?;
        let mut entries = Vec::with_capacity(rows.len());
        for (k, row) in rows.iter().enumerate() {
            let f = format!("{m_field}[{k}]");
            let row = tuple(row, &f, 3, "[in, out, value] with interface ids and a value in bit/s")?;
            let bps = row[2]
                .as_u64()
                .ok_or_else(|| at(format!("{f}[2]"), Problem::Expected("a value in bit/s from 0 to 2^64 - 1")))?;
            entries.push(MatrixEntry {
                ingress: interface(&row[0], &format!("{f}[0]"))?,
                egress: interface(&row[1], &format!("{f}[1]"))?,
                bps,
            });
        }
        let matrix =
            AllocationMatrix::new(entries.iter().copied()).map_err(|e| at(format!("{m_field}[{}]", e.index()), e))?;
        if listed.insert(ia, (key.clone(), entries)).is_some() {
            return Err(at(field, TopologyError::DuplicateAs { ia }));
        }
        nodes.push((ia, matrix));
    }

    let links_value = root.get("links").ok_or_else(|| at("links", Problem::Expected("an array of links")))?;
    let link_rows = links_value.as_array().ok_or_else(|| at("links", Problem::Expected("an array of links")))?;
    let mut links = Vec::with_capacity(link_rows.len());
    for (k, row) in link_rows.iter().enumerate() {
        let f = format!("links[{k}]");
        let row = tuple(row, &f, 4, "[\"<AS>\", interface, \"<AS>\", interface]")?;
        links.push(Link {
            a: isd_asn(&row[0], &format!("{f}[0]"))?,
            a_interface: interface(&row[1], &format!("{f}[1]"))?,
            b: isd_asn(&row[2], &format!("{f}[2]"))?,
            b_interface: interface(&row[3], &format!("{f}[3]"))?,
        });
    }
    let topology = Topology::new(nodes, links).map_err(|e| {
        let field = match e {
            TopologyError::UnknownAs { link, .. }
            | TopologyError::LocalInterfaceInLink { link, .. }
            | TopologyError::SelfLink { link, .. }
            | TopologyError::InterfaceInUse { link, .. } => format!("links[{link}]"),
            // Caught above; the AS's key if it ever came here.
            TopologyError::DuplicateAs { ia } => {
                format!("nodes.{}", listed.get(&ia).map_or(ia.to_string(), |l| l.0.clone()))
            }
            TopologyError::UnlinkedInterface { ia, interface } => match listed.get(&ia) {
                Some((key, entries)) => {
                    let k = entries.iter().position(|e| e.ingress == interface || e.egress == interface).unwrap_or(0);
                    format!("nodes.{key}.M[{k}]")
                }
                None => format!("nodes.{ia}"),
            },
        };
        at(field, e)
    })?;

    let paths = match root.get("paths") {
        None => None,
        Some(v) => Some(parse_paths(v, &topology)?),
    };
    Ok(GmaInput { topology, paths })
}

fn parse_paths(v: &Value, topology: &Topology) -> Result<Vec<(String, Vec<Hop>)>, FieldError> {
    let list = v.as_array().ok_or_else(|| at("paths", Problem::Expected("an array of {\"id\", \"hops\"}")))?;
    let mut first_with_id: BTreeMap<&str, usize> = BTreeMap::new();
    let mut first_with_hops: BTreeMap<Vec<Hop>, usize> = BTreeMap::new();
    let mut paths = Vec::with_capacity(list.len());
    for (k, p) in list.iter().enumerate() {
        let f = format!("paths[{k}]");
        let p = object(p, &f, &["id", "hops"])?;
        let id =
            p.get("id").and_then(Value::as_str).ok_or_else(|| at(format!("{f}.id"), Problem::Expected("a string")))?;
        if let Some(&first) = first_with_id.get(id) {
            return Err(at(format!("{f}.id"), Problem::DuplicateId { first }));
        }
        first_with_id.insert(id, k);
        let hops_field = format!("{f}.hops");
        let rows = p
            .get("hops")
            .and_then(Value::as_array)
            .ok_or_else(|| at(&hops_field, Problem::Expected("an array of [\"<AS>\", in, out]")))?;
        let mut hops = Vec::with_capacity(rows.len());
        for (h, row) in rows.iter().enumerate() {
            let hf = format!("{hops_field}[{h}]");
            let row = tuple(row, &hf, 3, "[\"<AS>\", in, out]")?;
            hops.push(Hop {
                ia: isd_asn(&row[0], &format!("{hf}[0]"))?,
                ingress: interface(&row[1], &format!("{hf}[1]"))?,
                egress: interface(&row[2], &format!("{hf}[2]"))?,
            });
        }
        topology.hop_values(&hops).map_err(|e| match e.hop() {
            Some(h) => at(format!("{hops_field}[{h}]"), e),
            None => at(&hops_field, e),
        })?;
        // GMA bounds the load of distinct paths; the same path twice is one allocation (one AID).
        if let Some(&first) = first_with_hops.get(&hops) {
            return Err(at(hops_field, Problem::DuplicatePath { first }));
        }
        first_with_hops.insert(hops.clone(), k);
        paths.push((id.to_string(), hops));
    }
    Ok(paths)
}
