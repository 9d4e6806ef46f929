//! Stored frames on the reading side: a large finished session's frame is
//! stored when it is first read from its rows, and read back from there
//! while its samples stay the same.

use firsttoken_analyze::PhaseKind::Warm;
use firsttoken_analyze::{FrameBuilder, GroupKey, STORED_FRAME_FORMAT};
use firsttoken_record::Store;
use firsttoken_record::session::Provenance::Measured;
use firsttoken_record::session::{SessionMeta, SessionStatus};
use firsttoken_record::store::FrameStamp;

use crate::testutil::{meta, put, row, rows, spread, store};
use crate::{LoadOptions, Selection, analyse, load};

/// Stored frames from 10 samples.
fn from_ten() -> LoadOptions {
    LoadOptions {
        stored_frames_from: Some(10),
        ..LoadOptions::default()
    }
}

/// The analysis of session `id` by path, as JSON.
async fn analysed(store: &Store, id: &str, options: LoadOptions) -> String {
    let loaded = load(store, &Selection::Sessions(vec![id.into()]), options)
        .await
        .unwrap();
    serde_json::to_string(&analyse(&loaded, &[GroupKey::Path])).unwrap()
}

async fn stamp(store: &Store, id: &str) -> FrameStamp {
    store
        .frame_stamp(id, STORED_FRAME_FORMAT)
        .await
        .unwrap()
        .unwrap()
}

async fn stored(store: &Store, id: &str) -> bool {
    let stamp = stamp(store, id).await;
    store
        .stored_frame_chunk(id, stamp, 0)
        .await
        .unwrap()
        .is_some()
}

#[tokio::test]
async fn a_large_finished_session_is_read_from_its_stored_frame_while_its_samples_stay() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let s = meta("s1", "v1", Measured);
    put(
        &store,
        &s,
        &rows("s1", Measured, (Warm, "chat"), 0, spread(100.0, 12)),
    )
    .await;
    assert!(!stored(&store, "s1").await);
    // The first read stores the frame, the next reads it: the same analysis.
    let first = analysed(&store, "s1", from_ten()).await;
    assert!(stored(&store, "s1").await);
    assert_eq!(analysed(&store, "s1", from_ten()).await, first);
    assert_eq!(analysed(&store, "s1", LoadOptions::default()).await, first);

    // What is read is the stored frame: one stored under the same stamp
    // from other rows is what the next read gives.
    let other = rows("s1", Measured, (Warm, "elsewhere"), 0, spread(100.0, 12));
    let mut b = FrameBuilder::new(std::slice::from_ref(&s)).unwrap();
    for r in &other {
        b.push(r).unwrap();
    }
    let at = stamp(&store, "s1").await;
    store
        .put_stored_frame("s1", at, b.stored_chunks())
        .await
        .unwrap();
    assert!(
        analysed(&store, "s1", from_ten())
            .await
            .contains("elsewhere")
    );
    // Not with stored frames off.
    let off = LoadOptions {
        stored_frames_from: None,
        ..LoadOptions::default()
    };
    assert_eq!(analysed(&store, "s1", off).await, first);

    // One sample more: its rows are read again, and its frame stored anew.
    store
        .append_sample(&row("s1", Measured, (Warm, "chat"), 12, 100.0))
        .await
        .unwrap();
    let after = analysed(&store, "s1", from_ten()).await;
    assert!(!after.contains("elsewhere"));
    assert_ne!(after, first, "13 samples now");
    assert!(stored(&store, "s1").await);
    assert_eq!(
        store.stored_frame_chunk("s1", at, 0).await.unwrap(),
        None,
        "the stale frame is gone"
    );
    assert_eq!(analysed(&store, "s1", from_ten()).await, after);
}

#[tokio::test]
async fn small_running_and_unreadable_frames_are_read_from_rows() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let ttfts = || spread(100.0, 12);
    // Below the threshold: nothing stored.
    put(
        &store,
        &meta("small", "v1", Measured),
        &rows("small", Measured, (Warm, "chat"), 0, ttfts()),
    )
    .await;
    let small = LoadOptions {
        stored_frames_from: Some(13),
        ..LoadOptions::default()
    };
    analysed(&store, "small", small).await;
    assert!(!stored(&store, "small").await);
    // Still running: its samples will change; nothing stored.
    let running = SessionMeta {
        status: SessionStatus::Running,
        ..meta("running", "v1", Measured)
    };
    put(
        &store,
        &running,
        &rows("running", Measured, (Warm, "chat"), 0, ttfts()),
    )
    .await;
    analysed(&store, "running", from_ten()).await;
    assert!(!stored(&store, "running").await);
    // Bytes stored under its stamp that are not a frame: its rows are
    // read, and a frame stored over them.
    put(
        &store,
        &meta("garbled", "v1", Measured),
        &rows("garbled", Measured, (Warm, "chat"), 0, ttfts()),
    )
    .await;
    let from_rows = analysed(
        &store,
        "garbled",
        LoadOptions {
            stored_frames_from: None,
            ..LoadOptions::default()
        },
    )
    .await;
    let at = stamp(&store, "garbled").await;
    store
        .put_stored_frame("garbled", at, std::iter::once(vec![0xff; 16]))
        .await
        .unwrap();
    assert_eq!(analysed(&store, "garbled", from_ten()).await, from_rows);
    let head = store
        .stored_frame_chunk("garbled", at, 0)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        head,
        vec![0xff; 16],
        "a frame was stored over the garbled bytes"
    );
    assert_eq!(analysed(&store, "garbled", from_ten()).await, from_rows);
}
