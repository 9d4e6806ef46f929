//! Replays the committed fuzz corpus (fuzz/corpus/<target>/) and the
//! inputs of fixed crashes (fuzz/regressions/<target>/) through the fuzz
//! targets' own property checks, so `cargo test` checks them with no
//! fuzzing tool and no extra build (see docs/FUZZING.md).

#[path = "../../../fuzz/src/record.rs"]
#[allow(dead_code)]
mod checks;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn import_corpus_holds_its_properties() {
    replay::replay("import", checks::import);
}

mod common;

/// A complete export as the writer makes it (every field set, and a
/// sample of nulls) holds the import properties. With
/// `FIRSTTOKEN_WRITE_SEEDS=1` it is also written to fuzz/corpus/import as
/// a seed (docs/FUZZING.md).
#[test]
fn a_written_export_holds_the_import_properties() {
    use firsttoken_record::export::write_session_jsonl;
    let mut meta = common::full_session("s-1", "2026-11-30T01:00:00.000Z");
    meta.cleanup = Some(common::cleanup());
    let rows = [
        common::full_row("s-1", 0, 1.0),
        common::null_row("s-1", 1, 2.0),
    ];
    let mut buf = Vec::new();
    write_session_jsonl(&meta, &rows, &mut buf).unwrap();
    checks::import(&buf);
    let (sessions, read) = firsttoken_record::export::read_jsonl(buf.as_slice()).unwrap();
    assert_eq!(
        (sessions.len(), read.len()),
        (1, 2),
        "the check saw a real export"
    );
    if std::env::var_os("FIRSTTOKEN_WRITE_SEEDS").is_some() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/import");
        std::fs::create_dir_all(&dir).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The whole export, the session line alone, each sample alone, and
        // a sample without its session (refused by grouping).
        let seeds = [
            text.clone(),
            format!("{}\n", lines[0]),
            format!("{}\n{}\n", lines[0], lines[1]),
            format!("{}\n{}\n", lines[0], lines[2]),
            format!("{}\n", lines[2]),
            format!("\n{}\n\n{}\n", lines[0], lines[1]),
        ];
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-export-{i}")), s).unwrap();
        }
    }
}
