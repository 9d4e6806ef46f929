//! Import in two streaming passes, and export as the rows are read (issue
//! 23): the same tests on SQLite and PostgreSQL (set `DATABASE_URL`).

mod common;

use std::io::{Cursor, Write};

use common::{TestDb, full_row, full_session, null_row};
use firsttoken_record::export::{self, Format, mark_imported, write_session};
use firsttoken_record::import::{Import, ImportEvent};
use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use firsttoken_record::span::SpanRow;
use firsttoken_record::store::{Store, StoreError};

both_backends!(
    a_multi_session_file_is_stored_session_by_session,
    a_bad_last_line_leaves_the_store_untouched,
    a_file_changed_between_the_passes_rolls_its_session_back,
    a_file_changed_between_the_passes_stores_what_was_checked,
    the_checked_cells_store_what_parsing_twice_stores,
    sessions_the_store_holds_are_skipped,
    the_streamed_export_is_the_in_memory_export,
    an_export_imported_exports_again_as_it_was,
    checking_while_storing_stores_what_checking_first_stores,
    a_file_refused_while_storing_stores_nothing,
    a_session_held_is_skipped_while_checking,
);

/// `n` samples of session `id`, every third one all nulls, in start order.
fn rows(id: &str, n: u64) -> Vec<SampleRow> {
    (0..n)
        .map(|i| {
            let mut r = if i % 3 == 0 {
                null_row(id, i, i as f64)
            } else {
                full_row(id, i, i as f64)
            };
            r.sample.seq = i;
            r
        })
        .collect()
}

/// `n` spans of session `id`, in start order.
fn spans(id: &str, n: u64) -> Vec<SpanRow> {
    (0..n)
        .map(|i| {
            let mut s = SpanRow::new(
                id,
                "4bf92f3577b34da6a3ce929d0e0e4736",
                &format!("{:016x}", i + 1),
                "POST /chat",
            );
            s.start_unix_nano = 1_000 + i;
            s.end_unix_nano = 2_000 + i;
            s.attributes.insert("n".into(), i.into());
            s
        })
        .collect()
}

fn session(id: &str) -> SessionMeta {
    full_session(id, "2026-11-30T02:30:00.000Z")
}

/// A session's export lines, as the writer makes them.
fn lines(meta: &SessionMeta, rows: &[SampleRow], spans: &[SpanRow]) -> Vec<String> {
    let mut buf = Vec::new();
    export::write_session_jsonl(meta, rows, &mut buf).unwrap();
    export::write_spans_jsonl(spans, &mut buf).unwrap();
    String::from_utf8(buf)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn check(text: &str) -> Result<Import<Cursor<Vec<u8>>>, StoreError> {
    Import::check(Cursor::new(text.as_bytes().to_vec()), &mut |_| {})
}

/// (file id, stored id, samples seen in progress, spans) per stored
/// session, and the skipped file ids.
type Stored = (Vec<(String, String, u64, u64)>, Vec<String>);

/// What an import told ([`Stored`]).
#[derive(Default)]
struct Told {
    stored: Vec<(String, String, u64, u64)>,
    skipped: Vec<String>,
    progress: u64,
}

impl Told {
    fn hear(&mut self, e: ImportEvent<'_>) {
        match e {
            ImportEvent::Progress { stored, .. } => self.progress = stored,
            ImportEvent::Skipped { session, .. } => self.skipped.push(session.meta.id.clone()),
            ImportEvent::Stored {
                session,
                stored_as,
                spans,
            } => self.stored.push((
                session.meta.id.clone(),
                stored_as.id.clone(),
                std::mem::take(&mut self.progress),
                spans,
            )),
        }
    }

    fn told(self) -> Stored {
        (self.stored, self.skipped)
    }
}

/// Stores `import`; returns what it told ([`Told`]).
async fn store_all<R: std::io::Read + std::io::Seek + Send + 'static>(
    import: &Import<R>,
    store: &Store,
) -> Result<Stored, StoreError> {
    let mut told = Told::default();
    import.store(store, &mut |e| told.hear(e)).await?;
    Ok(told.told())
}

/// [`Import::check_and_store`] of `text`; returns what it told: a session
/// stored while the file was checked tells no progress.
async fn check_and_store_all(text: &str, store: &Store) -> Result<Stored, StoreError> {
    let mut told = Told::default();
    let source = Cursor::new(text.as_bytes().to_vec());
    Import::check_and_store(source, store, |_| {}, &mut |e| told.hear(e)).await?;
    Ok(told.told())
}

/// Session A (its cells more than one streamed message) then B; and the
/// same with a sample line of B first (nothing is streamed then; the
/// sessions are stored in the order of their session lines either way).
async fn checking_while_storing_stores_what_checking_first_stores(db: TestDb) {
    let store = db.open().await;
    let (a, b) = (session("s-a"), session("s-b"));
    let (rows_a, rows_b, spans_a) = (rows("s-a", 6000), rows("s-b", 5), spans("s-a", 3));
    let (la, lb) = (lines(&a, &rows_a, &spans_a), lines(&b, &rows_b, &[]));
    let a_first = format!("{}\n{}\n", la.join("\n"), lb.join("\n"));
    let b_sample_first = format!("{}\n{}\n{}\n", lb[1], la.join("\n"), lb[0]);
    let b_rest = lb[2..].join("\n");
    // (session, samples told as progress, spans) in the order stored: A's
    // progress is not told when it was stored while checking.
    for (text, told) in [
        (a_first, [("s-a", 0, 3), ("s-b", 5, 0)]),
        (b_sample_first + &b_rest, [("s-a", 6000, 3), ("s-b", 5, 0)]),
    ] {
        let (stored, skipped) = check_and_store_all(&text, &store).await.unwrap();
        assert!(skipped.is_empty());
        let got: Vec<(&str, u64, u64)> = stored.iter().map(|s| (s.0.as_str(), s.2, s.3)).collect();
        assert_eq!(got, told);
        for (orig, new_id, ..) in &stored {
            let (meta, rows, spans) = if orig == "s-a" {
                (&a, &rows_a, &spans_a[..])
            } else {
                (&b, &rows_b, &[][..])
            };
            let (_, want) = mark_imported(meta, rows, new_id);
            assert_eq!(store.samples(new_id).await.unwrap(), want, "{orig}");
            assert_eq!(store.spans(new_id).await.unwrap().len(), spans.len());
            // Gone, so the next file's sessions are not skipped as held.
            store.delete_session(new_id).await.unwrap();
        }
    }
}

/// A first session streamed into its transaction (more than one message
/// of cells), then a line refused, or a session with no samples: nothing
/// is stored, and the store takes the good part afterwards.
async fn a_file_refused_while_storing_stores_nothing(db: TestDb) {
    let store = db.open().await;
    let good = lines(&session("s-a"), &rows("s-a", 6000), &[]).join("\n");
    let bad_line = format!("{good}\n{{\"schema\":\"firsttoken.sample_row.v1\"\n");
    match check_and_store_all(&bad_line, &store).await {
        Err(StoreError::Malformed { line, .. }) => assert_eq!(line, 6002),
        other => panic!("expected the last line to be refused, got {other:?}"),
    }
    let empty = lines(&session("s-b"), &[], &[]).join("\n");
    match check_and_store_all(&format!("{good}\n{empty}\n"), &store).await {
        Err(StoreError::NoSamples { session_id }) => assert_eq!(session_id, "s-b"),
        other => panic!("expected s-b to be refused, got {other:?}"),
    }
    assert!(store.sessions().await.unwrap().is_empty());
    let (stored, _) = check_and_store_all(&good, &store).await.unwrap();
    assert_eq!(store.samples(&stored[0].1).await.unwrap().len(), 6000);
}

async fn a_session_held_is_skipped_while_checking(db: TestDb) {
    let store = db.open().await;
    let text = lines(&session("s-1"), &rows("s-1", 2), &[]).join("\n");
    let (stored, _) = check_and_store_all(&text, &store).await.unwrap();
    let (again, skipped) = check_and_store_all(&text, &store).await.unwrap();
    assert!(again.is_empty());
    assert_eq!(skipped, ["s-1"]);
    let held = store.sessions().await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].id, stored[0].1);
}

/// Three sessions: A with more samples than one batch and more spans than
/// one span batch; B and C with their samples interleaved and blank lines
/// between, B's spans last.
async fn a_multi_session_file_is_stored_session_by_session(db: TestDb) {
    let (a, b, c) = (session("s-a"), session("s-b"), session("s-c"));
    let (rows_a, rows_b, rows_c) = (rows("s-a", 600), rows("s-b", 5), rows("s-c", 4));
    let (spans_a, spans_b) = (spans("s-a", 1500), spans("s-b", 2));
    let mut text = lines(&a, &rows_a, &spans_a).join("\n") + "\n";
    let lb = lines(&b, &rows_b, &spans_b);
    let lc = lines(&c, &rows_c, &[]);
    text.push_str(&format!("{}\n{}\n", lb[0], lc[0]));
    for i in 0..5 {
        text.push_str(&format!("{}\n\n", lb[1 + i]));
        if i < 4 {
            text.push_str(&format!("{}\n", lc[1 + i]));
        }
    }
    text.push_str(&format!("{}\n{}\n", lb[6], lb[7]));

    let import = check(&text).unwrap();
    let found: Vec<(&str, u64, u64)> = import
        .sessions()
        .iter()
        .map(|s| (s.meta.id.as_str(), s.samples, s.spans))
        .collect();
    assert_eq!(found, [("s-a", 600, 1500), ("s-b", 5, 2), ("s-c", 4, 0)]);

    let store = db.open().await;
    let (stored, skipped) = store_all(&import, &store).await.unwrap();
    assert!(skipped.is_empty());
    let counts: Vec<(&str, u64, u64)> = stored
        .iter()
        .map(|(id, _, n, spans)| (id.as_str(), *n, *spans))
        .collect();
    assert_eq!(
        counts,
        [("s-a", 600, 1500), ("s-b", 5, 2), ("s-c", 4, 0)],
        "progress reached every sample; every span stored"
    );
    for ((orig, new_id, ..), (meta, rows, spans)) in stored.iter().zip([
        (&a, &rows_a, &spans_a),
        (&b, &rows_b, &spans_b),
        (&c, &rows_c, &Vec::new()),
    ]) {
        assert_eq!(orig, &meta.id);
        let back = store.session(new_id).await.unwrap().unwrap();
        assert_eq!(back.provenance, Provenance::Imported);
        assert_eq!(back.labels.tags["imported_from"], meta.id);
        let (_, want) = mark_imported(meta, rows, new_id);
        assert_eq!(store.samples(new_id).await.unwrap(), want);
        let mut want_spans = spans.clone();
        for s in &mut want_spans {
            s.session_id.clone_from(new_id);
        }
        assert_eq!(store.spans(new_id).await.unwrap(), want_spans);
    }
    assert_eq!(store.sessions().await.unwrap().len(), 3);
}

async fn a_bad_last_line_leaves_the_store_untouched(db: TestDb) {
    let store = db.open().await;
    let good = lines(&session("s-a"), &rows("s-a", 300), &spans("s-a", 3)).join("\n");
    let text =
        format!("{good}\n{{\"schema\":\"firsttoken.sample_row.v1\",\"session_id\":\"s-a\"\n");
    match check(&text) {
        Err(StoreError::Malformed { line, message }) => {
            assert_eq!(line, 305, "{message}");
            assert!(message.contains("not JSON"), "{message}");
        }
        other => panic!("expected the last line to be refused, got {other:?}"),
    }
    assert!(store.sessions().await.unwrap().is_empty());
    assert!(store.samples("s-a").await.unwrap().is_empty());
}

/// The file of two sessions, the second's last sample line then changed
/// (the same length, another session): its path, the two sessions' lines.
fn changed_after_the_check(
    dir: &tempfile::TempDir,
) -> (std::path::PathBuf, Vec<String>, Vec<String>) {
    let path = dir.path().join("export.jsonl");
    let first = lines(&session("s-1"), &rows("s-1", 3), &[]);
    let second = lines(&session("s-2"), &rows("s-2", 600), &[]);
    let text = format!("{}\n{}\n", first.join("\n"), second.join("\n"));
    std::fs::write(&path, &text).unwrap();
    (path, first, second)
}

fn change_the_last_line(path: &std::path::Path, second: &[String]) {
    let text = std::fs::read_to_string(path).unwrap();
    let last = second.last().unwrap();
    let swapped = last.replace("\"session_id\":\"s-2\"", "\"session_id\":\"s-9\"");
    assert_eq!(swapped.len(), last.len());
    std::fs::write(path, text.replace(last.as_str(), &swapped)).unwrap();
}

/// By default the store pass reads back the cells the check made: a
/// sample line changed since the check changes nothing stored.
async fn a_file_changed_between_the_passes_stores_what_was_checked(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, second) = changed_after_the_check(&dir);
    let import = Import::check(std::fs::File::open(&path).unwrap(), &mut |_| {}).unwrap();
    change_the_last_line(&path, &second);
    let store = db.open().await;
    let (stored, _) = store_all(&import, &store).await.unwrap();
    let counts: Vec<(String, usize)> = sample_counts(&store, &stored).await;
    assert_eq!(counts, [("s-1".to_string(), 3), ("s-2".to_string(), 600)]);
    let last = store.samples(&stored[1].1).await.unwrap();
    assert!(last.iter().all(|r| r.session_id == stored[1].1));
}

/// The cells the check kept, read back, store the rows a second parse of
/// the lines stores (every column, JSON ones included).
async fn the_checked_cells_store_what_parsing_twice_stores(db: TestDb) {
    let store = db.open().await;
    let text = lines(&session("s-t"), &rows("s-t", 300), &[]).join("\n");
    let mut got = Vec::new();
    for twice in [false, true] {
        let source = Cursor::new(text.clone().into_bytes());
        let import = if twice {
            Import::check_parsing_twice(source, &mut |_| {})
        } else {
            Import::check(source, &mut |_| {})
        }
        .unwrap();
        let (stored, _) = store_all(&import, &store).await.unwrap();
        let id = stored[0].1.clone();
        let mut rows = store.samples(&id).await.unwrap();
        for r in &mut rows {
            r.session_id = "s".into();
        }
        got.push(rows);
        // Gone, so the next import does not skip it as held.
        store.delete_session(&id).await.unwrap();
    }
    assert_eq!(got[0].len(), 300);
    assert_eq!(got[0], got[1]);
}

/// Each stored session's origin and how many samples it holds.
async fn sample_counts(
    store: &Store,
    stored: &[(String, String, u64, u64)],
) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (origin, id, _, _) in stored {
        out.push((origin.clone(), store.samples(id).await.unwrap().len()));
    }
    out
}

/// Parsing twice, the second pass finds a sample line changed since the
/// check: the session's open transaction (two batches in) rolls back; the
/// session before it stays.
async fn a_file_changed_between_the_passes_rolls_its_session_back(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let (path, first, second) = changed_after_the_check(&dir);
    let import =
        Import::check_parsing_twice(std::fs::File::open(&path).unwrap(), &mut |_| {}).unwrap();
    change_the_last_line(&path, &second);

    let store = db.open().await;
    let err = store_all(&import, &store).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Changed { line } if line == first.len() + second.len()),
        "{err}"
    );
    let held = store.sessions().await.unwrap();
    assert_eq!(held.len(), 1, "only the first session was stored");
    assert_eq!(held[0].labels.tags["imported_from"], "s-1");
    assert_eq!(store.samples(&held[0].id).await.unwrap().len(), 3);
}

async fn sessions_the_store_holds_are_skipped(db: TestDb) {
    let store = db.open().await;
    let text = lines(&session("s-1"), &rows("s-1", 2), &[]).join("\n");
    let (stored, _) = store_all(&check(&text).unwrap(), &store).await.unwrap();
    let (_, skipped) = store_all(&check(&text).unwrap(), &store).await.unwrap();
    assert_eq!(skipped, ["s-1"], "the same file again");
    // Exported from this store and imported back: still the same session.
    let held = store.session(&stored[0].1).await.unwrap().unwrap();
    let mut again = Vec::new();
    let samples = store.samples(&held.id).await.unwrap();
    export::write_session_jsonl(&held, &samples, &mut again).unwrap();
    let import = Import::check(Cursor::new(again), &mut |_| {}).unwrap();
    let (stored, skipped) = store_all(&import, &store).await.unwrap();
    assert!(stored.is_empty());
    assert_eq!(skipped, [held.id]);
    assert_eq!(store.sessions().await.unwrap().len(), 1);
}

async fn the_streamed_export_is_the_in_memory_export(db: TestDb) {
    let store = db.open().await;
    let meta = session("s-x");
    store.create_session(&meta).await.unwrap();
    for r in rows("s-x", 2100) {
        store.append_sample(&r).await.unwrap();
    }
    let got = store
        .append_spans("s-x", &spans("s-x", 5), 100)
        .await
        .unwrap();
    assert_eq!(got.stored, 5);
    let meta = store.session("s-x").await.unwrap().unwrap();
    let (samples, spans) = (
        store.samples("s-x").await.unwrap(),
        store.spans("s-x").await.unwrap(),
    );

    let mut want = Vec::new();
    export::write_session_jsonl(&meta, &samples, &mut want).unwrap();
    export::write_spans_jsonl(&spans, &mut want).unwrap();
    let mut jsonl = Vec::new();
    let written = write_session(&store, &meta, Format::Jsonl, &mut jsonl)
        .await
        .unwrap();
    assert_eq!((written.samples, written.spans), (2100, 5));
    assert!(jsonl == want, "the JSONL export differs");

    let mut want = Vec::new();
    export::write_csv(&samples, &mut want).unwrap();
    let mut csv = Vec::new();
    let written = write_session(&store, &meta, Format::Csv, &mut csv)
        .await
        .unwrap();
    assert_eq!((written.samples, written.spans), (2100, 0));
    assert!(csv == want, "the CSV export differs");

    // A writer that fails stops the scan; its error comes back whole.
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 < b.len() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "no room",
                ));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match write_session(&store, &meta, Format::Jsonl, Full(100_000)).await {
        Err(StoreError::Write { source }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull)
        }
        other => panic!("expected a write error, got {other:?}"),
    }
}

/// Export, import, export: every column of every sample comes back as
/// it was (PostgreSQL stores the import through `COPY … (FORMAT binary)`,
/// SQLite through its `INSERT`), the import changing only what it marks:
/// the session id and the provenance. More rows than two batches, so the
/// last batch is a smaller one.
async fn an_export_imported_exports_again_as_it_was(db: TestDb) {
    let store = db.open().await;
    store.create_session(&session("s-r")).await.unwrap();
    for r in rows("s-r", 700) {
        store.append_sample(&r).await.unwrap();
    }
    store
        .append_spans("s-r", &spans("s-r", 3), 100)
        .await
        .unwrap();
    let meta = store.session("s-r").await.unwrap().unwrap();
    let mut first = Vec::new();
    write_session(&store, &meta, Format::Jsonl, &mut first)
        .await
        .unwrap();
    // Gone from the store, so the import does not skip it as held.
    db.raw_exec(
        "DELETE FROM spans WHERE session_id = 's-r';
         DELETE FROM samples WHERE session_id = 's-r';
         DELETE FROM sessions WHERE id = 's-r';",
    )
    .await
    .unwrap();

    let import = Import::check(Cursor::new(first.clone()), &mut |_| {}).unwrap();
    let (stored, _) = store_all(&import, &store).await.unwrap();
    let new_id = &stored[0].1;
    let back = store.session(new_id).await.unwrap().unwrap();
    let mut second = Vec::new();
    let written = write_session(&store, &back, Format::Jsonl, &mut second)
        .await
        .unwrap();
    assert_eq!((written.samples, written.spans), (700, 3));

    let was = export::read_export(Cursor::new(first)).unwrap();
    let (_, rows) = mark_imported(&meta, &was.rows, new_id);
    let mut spans = was.spans;
    for s in &mut spans {
        s.session_id.clone_from(new_id);
    }
    let mut want = Vec::new();
    export::write_session_jsonl(&back, &rows, &mut want).unwrap();
    export::write_spans_jsonl(&spans, &mut want).unwrap();
    let (second, want) = (
        String::from_utf8(second).unwrap(),
        String::from_utf8(want).unwrap(),
    );
    for (i, (got, want)) in second.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "line {}", i + 1);
    }
    assert_eq!(second.lines().count(), want.lines().count());
}

#[test]
fn what_the_check_refuses_names_its_cause() {
    let meta = session("s-1");
    let l = lines(&meta, &rows("s-1", 2), &spans("s-1", 1));
    // The first sample is all nulls, the second has every field.
    let (sess, sample, full, span) = (&l[0], &l[1], &l[2], &l[3]);
    let other = |line: &str| line.replace("\"s-1\"", "\"s-2\"");
    type Want = fn(&StoreError) -> bool;
    let cases: Vec<(String, Want)> = vec![
        (String::new(), |e| matches!(e, StoreError::NoSessions)),
        (
            format!("{sess}\n"),
            |e| matches!(e, StoreError::NoSamples { session_id } if session_id == "s-1"),
        ),
        (
            format!("{sess}\n{sample}\n{}\n", other(sample)),
            |e| matches!(e, StoreError::NoSessionRecord { session_id } if session_id == "s-2"),
        ),
        (
            format!("{sess}\n{sample}\n{}\n", other(span)),
            |e| matches!(e, StoreError::NoSpanSession { session_id } if session_id == "s-2"),
        ),
        (format!("{sess}\n{sample}\n\n{sess}\n"), |e| {
            matches!(e, StoreError::DuplicateSession { line: 4, .. })
        }),
        (
            format!(
                "{sess}\n{}\n",
                full.replace(
                    "4bf92f3577b34da6a3ce929d0e0e4736",
                    "4BF92F3577B34DA6A3CE929D0E0E4736"
                )
            ),
            |e| matches!(e, StoreError::Malformed { line: 2, message } if message.contains("would refuse this sample")),
        ),
        // Turns count from 1 (both stores' `CHECK`): refused by the
        // check, not by the store halfway through.
        (
            format!("{sess}\n{}\n", full.replace("\"turn\":3", "\"turn\":0")),
            |e| matches!(e, StoreError::Malformed { line: 2, message } if message.contains("turn = 0")),
        ),
        (
            format!(
                "{sess}\n{sample}\n{}\n",
                span.replace("\"span_id\":\"0000000000000001\"", "\"span_id\":\"0\"")
            ),
            |e| matches!(e, StoreError::Malformed { line: 3, message } if message.contains("would refuse this span")),
        ),
        (
            format!("{sess}\n[1]\n"),
            |e| matches!(e, StoreError::Malformed { line: 2, message } if message == "not a JSON object"),
        ),
    ];
    for (text, want) in cases {
        match check(&text) {
            Err(e) => assert!(want(&e), "{text:?}: {e}"),
            Ok(_) => panic!("{text:?} was accepted"),
        }
    }
    // A sample line whose `schema` is not its first member reads the same.
    let moved = sample.replacen("{\"schema\":\"firsttoken.sample_row.v1\",", "{", 1);
    let moved = format!(
        "{},\"schema\":\"firsttoken.sample_row.v1\"}}",
        &moved[..moved.len() - 1]
    );
    let import = check(&format!("{sess}\n{moved}\n")).unwrap();
    assert_eq!(import.sessions()[0].samples, 1);
    let (_, read) = export::read_jsonl(format!("{sess}\n{moved}\n").as_bytes()).unwrap();
    assert_eq!(read, rows("s-1", 1));
}

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

/// The streaming check and the in-memory reader agree on every committed
/// fuzz input: what the check accepts the reader accepts, with the same
/// sessions and counts; what only the reader accepts, the check refuses
/// for a value the store would refuse.
#[test]
fn the_check_agrees_with_the_in_memory_reader_on_the_fuzz_corpus() {
    replay::replay("import", |data| {
        let checked = Import::check(Cursor::new(data.to_vec()), &mut |_| {});
        let read = export::read_export(data).ok().and_then(|c| {
            let spans_ok = c
                .spans
                .iter()
                .all(|s| c.sessions.iter().any(|m| m.id == s.session_id));
            let spans = c.spans;
            let groups = export::group_for_import(c.sessions, c.rows).ok()?;
            let whole = spans_ok && !groups.is_empty() && groups.iter().all(|(_, r)| !r.is_empty());
            whole.then_some((groups, spans))
        });
        match (checked, read) {
            (Ok(import), Some((groups, spans))) => {
                let got: Vec<(&str, u64, u64)> = import
                    .sessions()
                    .iter()
                    .map(|s| (s.meta.id.as_str(), s.samples, s.spans))
                    .collect();
                let want: Vec<(&str, u64, u64)> = groups
                    .iter()
                    .map(|(m, r)| {
                        let n = spans.iter().filter(|s| s.session_id == m.id).count();
                        (m.id.as_str(), r.len() as u64, n as u64)
                    })
                    .collect();
                assert_eq!(got, want);
            }
            (Ok(_), None) => panic!("the check accepted what the reader refuses"),
            (Err(StoreError::Malformed { message, .. }), Some(_)) => {
                assert!(message.contains("would refuse"), "{message}")
            }
            (Err(e), Some(_)) => panic!("only the check refused: {e}"),
            (Err(_), None) => {}
        }
    });
}

/// The server ends its own connection at the 300th sample inserted
/// (once).
async fn kill_the_300th_sample_insert(db: &TestDb) {
    db.raw_exec(
        "CREATE SEQUENCE kills;
         CREATE FUNCTION kill_me() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF nextval('kills') = 300 THEN
                 PERFORM pg_terminate_backend(pg_backend_pid());
             END IF;
             RETURN NEW;
         END $$;
         CREATE TRIGGER kill_me BEFORE INSERT ON samples FOR EACH ROW EXECUTE FUNCTION kill_me();",
    )
    .await
    .unwrap();
}

/// A connection killed in the middle of an import's transaction: the
/// import runs again on a fresh connection, reading its samples from the
/// file again, and stores the session once.
#[tokio::test]
async fn postgres_an_import_retries_once_after_a_dropped_connection() {
    common::run(TestDb::postgres().await, |db| async move {
        let store = db.open().await;
        kill_the_300th_sample_insert(&db).await;
        let text = lines(&session("s-1"), &rows("s-1", 600), &[]).join("\n");
        let before = store.reconnects();
        let (stored, _) = store_all(&check(&text).unwrap(), &store).await.unwrap();
        assert_eq!(store.reconnects(), before + 1, "retried once");
        assert_eq!(stored.len(), 1);
        assert_eq!(store.samples(&stored[0].1).await.unwrap().len(), 600);
        assert_eq!(store.sessions().await.unwrap().len(), 1);
    })
    .await;
}

/// The same, the file checked while its session is stored: the streamed
/// attempt fails with the connection, and the session is stored once,
/// after the check, its lines parsed again.
#[tokio::test]
async fn postgres_an_import_checked_while_storing_is_stored_once_after_a_dropped_connection() {
    common::run(TestDb::postgres().await, |db| async move {
        let store = db.open().await;
        kill_the_300th_sample_insert(&db).await;
        let text = lines(&session("s-1"), &rows("s-1", 6000), &[]).join("\n");
        let before = store.reconnects();
        let (stored, _) = check_and_store_all(&text, &store).await.unwrap();
        assert_eq!(store.reconnects(), before + 1);
        assert_eq!(stored.len(), 1);
        assert_eq!(
            stored[0].2, 6000,
            "stored after the check, telling progress"
        );
        assert_eq!(store.samples(&stored[0].1).await.unwrap().len(), 6000);
        assert_eq!(store.sessions().await.unwrap().len(), 1);
    })
    .await;
}
