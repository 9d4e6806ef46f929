//! Property checks behind firsttoken's fuzz targets. The same files are
//! compiled into the workspace's corpus-replay tests
//! (`crates/{drive,plan,record}/tests/fuzz_corpus.rs`) with `#[path]`, so
//! `cargo test --workspace` checks every committed corpus input with the
//! fuzzer's own properties and no fuzzing tool.

pub mod drive;
pub mod plan;
pub mod record;
