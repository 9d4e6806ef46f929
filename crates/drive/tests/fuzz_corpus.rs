//! Replays the committed fuzz corpus (fuzz/corpus/<target>/) and the
//! inputs of fixed crashes (fuzz/regressions/<target>/) through the fuzz
//! targets' own property checks, so `cargo test` checks them with no
//! fuzzing tool and no extra build (see docs/FUZZING.md).

#[path = "../../../fuzz/src/drive.rs"]
#[allow(dead_code)]
mod checks;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn sse_corpus_holds_its_properties() {
    replay::replay("sse", checks::sse);
}

#[test]
fn lines_corpus_holds_its_properties() {
    replay::replay("lines", checks::lines);
}

#[test]
fn decode_corpus_holds_its_properties() {
    replay::replay("decode", checks::decode);
}

#[test]
fn server_timing_corpus_holds_its_properties() {
    replay::replay("server_timing", checks::server_timing);
}

#[test]
fn inflate_corpus_holds_its_properties() {
    replay::replay("inflate", checks::inflate);
}
