//! A scratch directory for a test: fresh and empty when made, removed when the test passes.
//!
//! Tests used to name a directory in the system temp dir after their process id and never remove
//! it, so every run left its configs, keys and logs behind. A failed test's directory is kept on
//! purpose: the logs of the processes a multi-process test started are what explain the failure.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Tells apart the directories one test binary makes under the same name, since tests of one
/// binary run in parallel threads of one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// `temp_dir()/aviary-{name}-{pid}-{n}`, removed on drop unless the thread is panicking.
///
/// Whatever uses the directory (a child process, a runner holding its path) must be dropped
/// before it: declare the `ScratchDir` first in a test, or last in a struct that holds it.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Panics if the directory cannot be made: this is test support, and the test cannot go on.
    pub fn new(name: &str) -> ScratchDir {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("aviary-{name}-{}-{n}", std::process::id()));
        // A stale directory of a crashed run with a recycled pid; absent is the usual case.
        let _ = std::fs::remove_dir_all(&path);
        if let Err(e) = std::fs::create_dir_all(&path) {
            panic!("cannot create the scratch directory {}: {e}", path.display());
        }
        ScratchDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the scratch directory of the failed test: {}", self.0.display());
        } else {
            // Nothing to do about a directory that will not go: the test has passed.
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ScratchDir;

    #[test]
    fn new_is_an_empty_directory() {
        let dir = ScratchDir::new("scratch-empty");
        assert!(dir.is_dir());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn the_same_name_gives_two_directories() {
        let a = ScratchDir::new("scratch-twice");
        let b = ScratchDir::new("scratch-twice");
        assert_ne!(a.path(), b.path());
        assert!(a.is_dir() && b.is_dir());
    }

    #[test]
    fn dropped_normally_it_is_removed() {
        let dir = ScratchDir::new("scratch-drop");
        std::fs::write(dir.join("log"), "written by the test").unwrap();
        let path = dir.to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn dropped_in_a_panic_it_is_kept() {
        let (tx, rx) = std::sync::mpsc::channel();
        let result = std::panic::catch_unwind(move || {
            let dir = ScratchDir::new("scratch-panic");
            tx.send(dir.to_path_buf()).unwrap();
            panic!("the test fails");
        });
        assert!(result.is_err());
        let path = rx.recv().unwrap();
        let kept = path.is_dir();
        std::fs::remove_dir_all(&path).unwrap();
        assert!(kept);
    }
}
