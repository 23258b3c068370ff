//! Writes the shared test vectors: `cargo run -p aviary-hummingbird --example gen_vectors --
//! testdata/vectors` creates `testdata/vectors/hummingbird.json`. The output depends on
//! fixed inputs only, so rerunning it reproduces the file byte for byte; the `vectors` test
//! checks that the committed file is current.

#[path = "../tests/vectors_gen/mod.rs"]
mod vectors_gen;

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "testdata/vectors".into()));
    if args.next().is_some() {
        eprintln!("usage: gen_vectors [OUTPUT_DIR]");
        std::process::exit(2);
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    let path = dir.join(vectors_gen::FILE_NAME);
    let text = vectors_gen::render();
    if let Err(e) = std::fs::write(&path, &text) {
        eprintln!("cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
    println!("wrote {} ({} bytes)", path.display(), text.len());
}
