//! `firsttoken import` stores the frame of the session it streams, made
//! from its rows as they are written: the frame the first report would
//! otherwise make from the stored rows, byte for byte, on both stores (on
//! PostgreSQL, whose `jsonb` gives Server-Timing names back in its own
//! order, too), so the first report after an import reads that frame and
//! prints what a report from the rows prints.

mod common;
#[path = "common/demo_like.rs"]
mod demo_like;

use std::path::Path;

use common::agents::{Schema, block_on, with_client};
use common::{assert_code, firsttoken, text};
use firsttoken_analyze::{FrameBuilder, STORED_FRAME_FORMAT};
use firsttoken_record::Store;

/// Just over the size from which a report stores a session's frame
/// (`firsttoken_read::STORED_FRAME_MIN_ROWS`), so four chunks of rows.
const SAMPLES: usize = 50_500;

/// The stored frame of the store's one session, and the one a scan of its
/// rows makes, as chunks.
fn frames(url: &str) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    block_on(async {
        let store = Store::open(url).await.unwrap();
        let sessions = store.sessions().await.unwrap();
        assert_eq!(sessions.len(), 1);
        let s = &sessions[0];
        let stamp = store
            .frame_stamp(&s.id, STORED_FRAME_FORMAT)
            .await
            .unwrap()
            .expect("the session has samples");
        assert_eq!(stamp.samples, SAMPLES as u64);
        let mut stored = Vec::new();
        while let Some(c) = store
            .stored_frame_chunk(&s.id, stamp, stored.len() as u64)
            .await
            .unwrap()
        {
            stored.push(c);
        }
        let builder = FrameBuilder::new(std::slice::from_ref(s)).unwrap();
        let scanned = store
            .scan_views(&s.id, builder, |b, v| {
                b.push_view(v).map_err(|e| e.to_string())
            })
            .await
            .unwrap();
        (stored, scanned.stored_chunks().collect())
    })
}

fn report_json(url: &str) -> String {
    let out = firsttoken(&["report", "--store", url, "--format", "json"], &[]);
    assert_code(&out, 0);
    text(&out.stdout)
}

fn imported_frame_is_the_rows_frame(url: &str, export: &Path, delete_frames: impl Fn()) {
    let out = firsttoken(&["import", "--store", url, export.to_str().unwrap()], &[]);
    assert_code(&out, 0);
    let (stored, scanned) = frames(url);
    assert_eq!(
        stored.len(),
        5,
        "the head and four chunks of rows, stored by the import"
    );
    assert!(
        stored == scanned,
        "the import's frame is the frame of the rows as stored"
    );
    // The first report reads that frame; with it deleted, the report reads
    // the rows (and stores their frame): the same report.
    let from_import = report_json(url);
    delete_frames();
    assert_eq!(frames(url).0.len(), 0, "the frame was deleted");
    assert_eq!(report_json(url), from_import);
    assert_eq!(frames(url).0.len(), 5, "the report stored the frame again");
}

#[test]
fn an_import_stores_the_frame_its_rows_make_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.jsonl");
    demo_like::generate(SAMPLES, &export, true);
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    imported_frame_is_the_rows_frame(db, &export, || {
        let c = rusqlite::Connection::open(db).unwrap();
        c.execute("DELETE FROM session_frames", []).unwrap();
    });
}

#[test]
fn an_import_stores_the_frame_its_rows_make_postgres() {
    let Ok(admin) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (PostgreSQL test)");
        return;
    };
    let schema = Schema::new(&admin, "import_frames");
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.jsonl");
    demo_like::generate(SAMPLES, &export, true);
    imported_frame_is_the_rows_frame(&schema.url, &export, || {
        with_client(&schema.url, async |c| {
            c.batch_execute("DELETE FROM session_frames").await.unwrap()
        })
    });
}
