use super::*;

const EXAMPLE: &str = include_str!("../../../../testdata/gma/example.json");

fn field_error(text: &str) -> String {
    match parse(text) {
        Err(InputError::Field(e)) => e.to_string(),
        other => panic!("expected a field error, got {other:?}"),
    }
}

/// The example with `paths` spliced in.
fn with_paths(paths: &str) -> String {
    let end = EXAMPLE.rfind('}').unwrap();
    format!("{}, \"paths\": {paths}}}", &EXAMPLE[..end])
}

#[test]
fn the_example_allocates_every_path_of_the_line() {
    let report = run(&parse(EXAMPLE).unwrap()).unwrap();
    let got: Vec<(&str, u64)> = report.paths.iter().map(|p| (p.id.as_str(), p.g)).collect();
    // Worked out by hand in crates/glwp/tests/hand_computed.rs.
    assert_eq!(
        got,
        vec![
            ("1-ff00:0:110>1-ff00:0:111#1", 30),
            ("1-ff00:0:110>1-ff00:0:112#1", 42),
            ("1-ff00:0:111>1-ff00:0:110#1", 20),
            ("1-ff00:0:111>1-ff00:0:112#1", 17),
            ("1-ff00:0:112>1-ff00:0:111#1", 22),
            ("1-ff00:0:112>1-ff00:0:110#1", 37),
        ]
    );
    assert!(report.pair_load.iter().all(|l| l.load <= l.m));
    assert!(table(&report).contains("1-ff00:0:110>1-ff00:0:112#1"));
}

#[test]
fn listed_paths_are_the_ones_allocated() {
    let text = with_paths(
        r#"[{"id": "a-c", "hops": [["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 1, 2], ["1-ff00:0:112", 1, 0]]}]"#,
    );
    let report = run(&parse(&text).unwrap()).unwrap();
    assert_eq!(report.paths.len(), 1);
    assert_eq!((report.paths[0].g, report.paths[0].prelim.clone()), (42, vec![100, 50, 42]));
    let a01 = report.pair_load.iter().find(|l| l.node.to_string() == "1-ff00:0:110" && l.ingress == 0).unwrap();
    assert_eq!((a01.load, a01.m), (42, 100));
}

#[test]
fn errors_name_the_field() {
    let cases: [(String, &str); 12] = [
        (EXAMPLE.replace("[1, 0, 60]", "[1, 0, -60]"), "nodes.1-ff00:0:112.M[1][2]: expected a value in bit/s"),
        (EXAMPLE.replace("[2, 1, 50]", "[2, 1]"), "nodes.1-ff00:0:111.M[5]: expected [in, out, value]"),
        (EXAMPLE.replace("[2, 1, 50]", "[0, 2, 50]"), "nodes.1-ff00:0:111.M[5]: interface pair (0, 2) is listed twice"),
        (EXAMPLE.replace("[2, 1, 50]", "[2, 70000, 50]"), "nodes.1-ff00:0:111.M[5][1]: expected an interface id"),
        (EXAMPLE.replace("[2, 1, 50]", "[2, 9, 50]"), "nodes.1-ff00:0:111.M[5]: the allocation matrix of 1-ff00:0:111 names interface 9"),
        (EXAMPLE.replace("\"1-ff00:0:112\": {", "\"1-ff00:0:1x2\": {"), "nodes.1-ff00:0:1x2: "),
        (EXAMPLE.replace("[\"1-ff00:0:111\", 2, \"1-ff00:0:112\", 1]", "[\"1-ff00:0:111\", 2, \"1-ff00:0:113\", 1]"), "links[1]: unknown AS 1-ff00:0:113"),
        (EXAMPLE.replace("\"M\": [[0, 1, 60]", "\"N\": 1, \"M\": [[0, 1, 60]"), "nodes.1-ff00:0:112: unknown field \"N\""),
        (
            with_paths(r#"[{"id": "x", "hops": [["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 2, 0]]}]"#),
            "paths[0].hops[0]: 1-ff00:0:110 interface 1 links to 1-ff00:0:111 interface 1, not to the next hop 1-ff00:0:111 interface 2",
        ),
        (
            with_paths(r#"[{"id": "x", "hops": [["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 1, 0]]}, {"id": "x", "hops": []}]"#),
            "paths[1].id: the same id as paths[0]",
        ),
        (
            with_paths(r#"[{"id": "x", "hops": [["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 1, 0]]}, {"id": "y", "hops": [["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 1, 0]]}]"#),
            "paths[1].hops: the same hops as paths[0]",
        ),
        (with_paths(r#"[{"id": "x", "hops": [["1-ff00:0:110", 0, 0]]}]"#), "paths[0].hops: a path needs at least two ASes"),
    ];
    for (text, want) in cases {
        let got = field_error(&text);
        assert!(got.starts_with(want), "got {got:?}, want {want:?}");
    }
    assert!(matches!(parse("{"), Err(InputError::Json(_))));
    assert_eq!(field_error("[]"), "(top level): expected an object");
    assert_eq!(field_error(r#"{"links": []}"#), "nodes: expected an object of ASes");
}

#[test]
fn a_dense_topology_without_paths_is_refused() {
    // A full mesh of 12 ASes has billions of loop-free paths.
    let n = 12u16;
    let name = |k: u16| format!("1-ff00:0:{:x}", 0x110 + k);
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    for k in 0..n {
        let ifaces: Vec<u16> = (0..=n).filter(|&i| i != k + 1).map(|i| if i == 0 { 0 } else { i }).collect();
        let mut m = Vec::new();
        for &i in &ifaces {
            for &j in &ifaces {
                if i != j {
                    m.push(format!("[{i}, {j}, 1000]"));
                }
            }
        }
        nodes.push(format!("\"{}\": {{\"M\": [{}]}}", name(k), m.join(", ")));
        for other in k + 1..n {
            links.push(format!("[\"{}\", {}, \"{}\", {}]", name(k), other + 1, name(other), k + 1));
        }
    }
    let text = format!("{{\"nodes\": {{{}}}, \"links\": [{}]}}", nodes.join(", "), links.join(", "));
    let err = run(&parse(&text).unwrap()).unwrap_err();
    assert!(
        matches!(err, RunError::Enumeration(EnumerationError::TooManyPrefixes { limit: ENUMERATION_LIMIT })),
        "{err}"
    );
}
