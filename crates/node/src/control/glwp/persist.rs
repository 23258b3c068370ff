//! The AS's matrix schedule on disk (`state_dir/glwp_schedule.json`), so that a GLWP service
//! restarted during a change (between `POST /v1/glwp/matrix` and t_2 + ΔT) keeps promoting
//! and announcing the same temporary and new values instead of its `[glwp]` table's matrix,
//! which its neighbours would rightly refuse as contradicting what it announced.
//!
//! Written atomically (a temporary file, synced and renamed) at every change, before the
//! change is announced, so a crash leaves the old schedule or the new one. Mode 0600: the
//! matrix is the AS's own business (neighbours learn only the rows of their links). The file
//! exists only once the AS changed its matrix; while it exists it, not the `[glwp]` table,
//! is the AS's schedule.
//!
//! ```json
//! {"before": {"matrix": [[1, 2, 6000000]]}, "after": {"matrix": [[1, 2, 4000000]]},
//!  "window": {"t1_ns": 1764100000000000000, "t2_ns": 1764186400000000000}}
//! ```

use std::path::{Path, PathBuf};

use aviary_glwp::{AllocationMatrix, ChangeWindow, MatrixSchedule};
use serde::{Deserialize, Serialize};

use super::config::GlwpConfig;
use crate::files::write_secret;
use crate::topology::{glwp_within_capacity, ConfigError};

/// The file's name in the control service's `state_dir`.
pub const SCHEDULE_FILE: &str = "glwp_schedule.json";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    matrix: Vec<[u64; 3]>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WindowFile {
    t1_ns: u64,
    t2_ns: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFile {
    before: MatrixFile,
    after: MatrixFile,
    window: Option<WindowFile>,
}

fn entries(m: &AllocationMatrix) -> MatrixFile {
    MatrixFile { matrix: m.entries().map(|e| [u64::from(e.ingress), u64::from(e.egress), e.bps]).collect() }
}

/// Where the schedule of a control service with `state_dir` lives.
pub fn schedule_path(state_dir: &Path) -> PathBuf {
    state_dir.join(SCHEDULE_FILE)
}

/// Replaces the file at `path` with `s`, atomically.
pub fn save(path: &Path, s: &MatrixSchedule) -> std::io::Result<()> {
    let file = ScheduleFile {
        before: entries(s.before()),
        after: entries(s.after()),
        window: s.window().map(|w| WindowFile { t1_ns: w.t1_ns, t2_ns: w.t2_ns }),
    };
    let text = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    write_secret(path, &text)
}

/// The schedule at `path`, if there is one, with both matrices checked as the `[glwp]` table
/// `table`'s would be against the AS's links (interface, capacity); errors name the file and
/// the field.
pub fn load(path: &Path, table: &GlwpConfig, links: &[(u16, u64)]) -> Result<Option<MatrixSchedule>, ConfigError> {
    let name = path.display().to_string();
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::new(&name, "(file)", e.to_string())),
    };
    let file: ScheduleFile =
        serde_json::from_slice(&text).map_err(|e| ConfigError::new(&name, "(json)", e.to_string()))?;
    let ids: Vec<u16> = links.iter().map(|l| l.0).collect();
    let check = |m: MatrixFile, prefix: &str| -> Result<AllocationMatrix, ConfigError> {
        let plan = GlwpConfig { matrix: m.matrix, ..table.clone() }.plan(&name, prefix, &ids)?;
        glwp_within_capacity(&name, &format!("{prefix}.matrix"), &plan.matrix, links)?;
        Ok(plan.matrix)
    };
    let (before, after) = (check(file.before, "before")?, check(file.after, "after")?);
    let window = file.window.map(|w| ChangeWindow { t1_ns: w.t1_ns, t2_ns: w.t2_ns });
    MatrixSchedule::resume(before, after, window)
        .map(Some)
        .map_err(|e| ConfigError::new(&name, "window", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_glwp::MatrixEntry;

    fn matrix(entries: &[[u64; 3]]) -> AllocationMatrix {
        AllocationMatrix::new(entries.iter().map(|&[i, j, bps]| MatrixEntry {
            ingress: i as u16,
            egress: j as u16,
            bps,
        }))
        .unwrap()
    }

    #[test]
    fn a_schedule_survives_the_round_trip_and_bad_files_name_the_field() {
        let dir = aviary_scratch::ScratchDir::new("glwp-schedule");
        let path = schedule_path(&dir);
        let table = GlwpConfig::with_matrix(vec![]);
        let links = [(1, 10_000_000), (2, 10_000_000)];
        assert_eq!(load(&path, &table, &links).unwrap(), None, "no file: no schedule");
        let mut s = MatrixSchedule::new(matrix(&[[1, 2, 6_000_000], [0, 1, 2_000_000]]));
        s.change(matrix(&[[1, 2, 4_000_000], [2, 0, 3_000_000]]), 100, 50).unwrap();
        save(&path, &s).unwrap();
        assert_eq!(load(&path, &table, &links).unwrap(), Some(s));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

        let cases = [
            (r#"{"before": {"matrix": []}, "after": {"matrix": [[1, 9, 1]]}}"#, "after.matrix[0]"),
            (r#"{"before": {"matrix": [[1, 2, 20000000]]}, "after": {"matrix": []}}"#, "before.matrix"),
            (r#"{"before": {"matrix": []}, "after": {"matrix": []}, "window": {"t1_ns": 5, "t2_ns": 4}}"#, "window"),
            (r#"{"before": {"matrix": []}}"#, "(json)"),
        ];
        for (text, field) in cases {
            std::fs::write(&path, text).unwrap();
            let e = load(&path, &table, &links).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.field.as_str()),
                (path.display().to_string().as_str(), field),
                "{text}: {e}"
            );
        }
    }
}
