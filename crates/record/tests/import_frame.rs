//! The frame an import makes of the session it streams
//! ([`Import::check_and_store_framing`]), on SQLite and PostgreSQL (set
//! `DATABASE_URL`): it is handed each row as a scan of the store will read
//! it back, in the order stored, and what it makes is stored under the
//! stamp of the rows as committed; rows written out of the scan's order,
//! or a frame that gives up, store none.

mod common;

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::{Arc, Mutex};

use common::{TestDb, full_row, full_session, null_row};
use firsttoken_record::export;
use firsttoken_record::import::{FrameChunkIter, Import, ImportFrame, ImportFrames};
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::store::Store;
use firsttoken_record::view::SampleView;

both_backends!(
    the_frame_sees_each_row_as_the_store_reads_it_back,
    rows_out_of_the_scan_s_order_make_no_frame,
    a_frame_that_gives_up_is_not_stored,
);

/// Made-up format of the recorded frame's chunks.
const FORMAT: i64 = 7;

/// `n` samples, every third one all nulls, in start order (two at each
/// start), with Server-Timing names that `jsonb` orders otherwise.
fn rows(id: &str, n: u64) -> Vec<SampleRow> {
    (0..n)
        .map(|i| {
            let start = (i / 2) as f64;
            let mut r = if i % 3 == 0 {
                null_row(id, i, start)
            } else {
                full_row(id, i, start)
            };
            r.sample.seq = i;
            if i % 3 == 1 {
                r.sample.server_timing = Some(BTreeMap::from([
                    ("auth".to_owned(), 1.5),
                    ("db".to_owned(), 12.5),
                    ("queue".to_owned(), 0.25),
                    ("total".to_owned(), 200.0),
                    ("stream".to_owned(), 90.0),
                ]));
            }
            r
        })
        .collect()
}

fn file(meta: &SessionMeta, rows: &[SampleRow]) -> Cursor<Vec<u8>> {
    let mut buf = Vec::new();
    export::write_session_jsonl(meta, rows, &mut buf).unwrap();
    Cursor::new(buf)
}

/// A frame that records each row it is handed (its `Debug` text), gives
/// up after `give_up_after` rows when set, and stores one chunk: its rows.
struct Recorder {
    seen: Arc<Mutex<Vec<String>>>,
    give_up_after: Option<usize>,
}

impl ImportFrame for Recorder {
    fn format(&self) -> i64 {
        FORMAT
    }
    fn push(&mut self, v: &SampleView<'_>) -> bool {
        let mut seen = self.seen.lock().unwrap();
        seen.push(format!("{v:?}"));
        self.give_up_after.is_none_or(|n| seen.len() < n)
    }
    fn finish(self: Box<Self>, rows: u64) -> Option<FrameChunkIter> {
        Some(Box::new(std::iter::once(rows.to_string().into_bytes())))
    }
}

/// Imports `file` with a [`Recorder`]; returns the stored session's id,
/// the rows the recorder was handed and its stored chunk, if any.
async fn import(
    store: &Store,
    file: Cursor<Vec<u8>>,
    give_up_after: Option<usize>,
) -> (String, Vec<String>, Option<String>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        seen: Arc::clone(&seen),
        give_up_after,
    };
    let frames: ImportFrames =
        Box::new(move |_stored: &SessionMeta| Some(Box::new(recorder) as Box<dyn ImportFrame>));
    Import::check_and_store_framing(file, store, Some(frames), |_| {}, &mut |_| {})
        .await
        .unwrap();
    let id = store.sessions().await.unwrap()[0].id.clone();
    let stamp = store.frame_stamp(&id, FORMAT).await.unwrap().unwrap();
    let chunk = store.stored_frame_chunk(&id, stamp, 0).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    (id, seen, chunk.map(|c| String::from_utf8(c).unwrap()))
}

async fn the_frame_sees_each_row_as_the_store_reads_it_back(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s", "2026-11-30T02:30:00.000Z");
    // More rows than one batch written at a time.
    let (id, seen, chunk) = import(&store, file(&meta, &rows("s", 700)), None).await;
    assert_eq!(
        chunk.as_deref(),
        Some("700"),
        "stored under the rows' stamp"
    );
    let read = store
        .scan_views(&id, Vec::new(), |out, v| {
            out.push(format!("{v:?}"));
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(read.len(), 700);
    assert!(
        seen == read,
        "the rows handed to the frame are the rows a scan reads back"
    );
}

async fn rows_out_of_the_scan_s_order_make_no_frame(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s", "2026-11-30T02:30:00.000Z");
    let mut rows = rows("s", 700);
    rows.swap(500, 503);
    let (id, _, chunk) = import(&store, file(&meta, &rows), None).await;
    assert_eq!(
        chunk, None,
        "no frame of rows a scan reads in another order"
    );
    assert_eq!(
        store.frame_stamp(&id, 0).await.unwrap().unwrap().samples,
        700,
        "the rows are stored"
    );
}

async fn a_frame_that_gives_up_is_not_stored(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s", "2026-11-30T02:30:00.000Z");
    let (id, seen, chunk) = import(&store, file(&meta, &rows("s", 700)), Some(300)).await;
    assert_eq!(chunk, None);
    assert_eq!(seen.len(), 300, "no row is handed to it after it gave up");
    assert_eq!(
        store.frame_stamp(&id, 0).await.unwrap().unwrap().samples,
        700
    );
}
