//! Replay of a fuzz target's committed inputs for the workspace tests
//! (compiled into them with `#[path]`; not part of the fuzz crate).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Run `check` on every file of `fuzz/corpus/<target>/` and
/// `fuzz/regressions/<target>/`, then fail naming every input whose
/// check panicked. The corpus must not be empty: a missing corpus would
/// make this test pass without checking anything.
pub fn replay(target: &str, check: fn(&[u8])) {
    let mut inputs = Vec::new();
    for dir in ["corpus", "regressions"] {
        let d = fuzz_dir().join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.expect("a readable corpus directory").path();
            if p.is_file() {
                inputs.push(p);
            }
        }
    }
    assert!(
        inputs.len() >= 5,
        "fuzz/corpus/{target} holds {} inputs; run fuzz/seeds/make.py or the fuzzer",
        inputs.len()
    );
    inputs.sort();
    let mut failed = Vec::new();
    for p in &inputs {
        let data = std::fs::read(p).expect("a readable corpus file");
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            failed.push(p.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} {target} inputs break a property: {failed:#?}",
        failed.len(),
        inputs.len()
    );
}
