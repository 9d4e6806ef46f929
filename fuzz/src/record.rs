//! Property checks for the import reader (`export::read_jsonl`, then
//! `group_for_import` and `mark_imported`, as `firsttoken import` runs
//! them), shared by the `import` fuzz target and
//! `crates/record/tests/fuzz_corpus.rs`.
//!
//! Beyond "no panic": whatever is accepted survives a round trip through
//! the writer (`write_session_jsonl`) with the same sessions, the same
//! number of samples per session, and every sample under its session's
//! new id.

use firsttoken_record::export::{group_for_import, mark_imported, read_jsonl, write_session_jsonl};

/// Read the bytes as an export file.
pub fn import(data: &[u8]) {
    let Ok((sessions, rows)) = read_jsonl(data) else {
        return;
    };
    let Ok(groups) = group_for_import(sessions, rows) else {
        return;
    };
    for (meta, rows) in &groups {
        let (m, marked) = mark_imported(meta, rows, "imported-1");
        assert_eq!(marked.len(), rows.len());
        assert!(marked.iter().all(|r| r.session_id == "imported-1"));
        let mut buf = Vec::new();
        write_session_jsonl(&m, &marked, &mut buf).expect("writing to memory");
        let (again, again_rows) = read_jsonl(buf.as_slice()).expect("what was written reads back");
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].id, "imported-1");
        assert_eq!(again_rows.len(), rows.len());
        let regrouped =
            group_for_import(again, again_rows).expect("its samples have their session");
        assert_eq!(regrouped[0].1.len(), rows.len());
    }
}
