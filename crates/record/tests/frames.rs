//! Stored frames (schema version 19), the same tests on SQLite and
//! PostgreSQL: chunks kept under the stamp of the samples they were made
//! from, given back only under that stamp, replaced whole, gone with
//! their session.

mod common;

use common::{TestDb, full_row, full_session};
use firsttoken_record::store::FrameStamp;

both_backends!(
    a_stored_frame_is_read_back_only_under_the_stamp_of_its_samples,
    a_stored_frame_is_replaced_whole_and_goes_with_its_session,
);

async fn a_stored_frame_is_read_back_only_under_the_stamp_of_its_samples(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261206T180000Z-frame", "2026-12-06T18:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    assert_eq!(store.frame_stamp(&meta.id, 1).await.unwrap(), None);
    for seq in 0..3 {
        store
            .append_sample(&full_row(&meta.id, seq, seq as f64))
            .await
            .unwrap();
    }
    let stamp = store.frame_stamp(&meta.id, 1).await.unwrap().unwrap();
    assert_eq!((stamp.format, stamp.samples), (1, 3));
    assert_eq!(
        store.stored_frame_chunk(&meta.id, stamp, 0).await.unwrap(),
        None
    );
    // Bytes of every value, kept as they are.
    let chunks = vec![vec![0u8, 1, 2, 255], (0..=255).collect::<Vec<u8>>()];
    store
        .put_stored_frame(&meta.id, stamp, chunks.clone().into_iter())
        .await
        .unwrap();
    for (k, bytes) in chunks.iter().enumerate() {
        let got = store.stored_frame_chunk(&meta.id, stamp, k as u64).await;
        assert_eq!(got.unwrap().as_ref(), Some(bytes), "chunk {k}");
    }
    assert_eq!(
        store.stored_frame_chunk(&meta.id, stamp, 2).await.unwrap(),
        None
    );
    // Another format, or samples other than those it was made from: none.
    let other_format = FrameStamp { format: 2, ..stamp };
    assert_eq!(
        store
            .stored_frame_chunk(&meta.id, other_format, 0)
            .await
            .unwrap(),
        None
    );
    store
        .append_sample(&full_row(&meta.id, 3, 3.0))
        .await
        .unwrap();
    let now = store.frame_stamp(&meta.id, 1).await.unwrap().unwrap();
    assert_eq!(now.samples, 4);
    assert!(now.last_id > stamp.last_id);
    assert_eq!(
        store.stored_frame_chunk(&meta.id, now, 0).await.unwrap(),
        None
    );
}

async fn a_stored_frame_is_replaced_whole_and_goes_with_its_session(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261206T180100Z-frame", "2026-12-06T18:01:00.000Z");
    store.create_session(&meta).await.unwrap();
    store
        .append_sample(&full_row(&meta.id, 0, 0.0))
        .await
        .unwrap();
    let stamp = store.frame_stamp(&meta.id, 1).await.unwrap().unwrap();
    let three = (0..3u8).map(|k| vec![k; 10]);
    store
        .put_stored_frame(&meta.id, stamp, three)
        .await
        .unwrap();
    // A frame of one chunk replaces the three.
    store
        .put_stored_frame(&meta.id, stamp, std::iter::once(vec![9u8; 4]))
        .await
        .unwrap();
    assert_eq!(
        store.stored_frame_chunk(&meta.id, stamp, 0).await.unwrap(),
        Some(vec![9u8; 4])
    );
    assert_eq!(
        store.stored_frame_chunk(&meta.id, stamp, 1).await.unwrap(),
        None
    );
    // A frame for a session the store does not hold is refused.
    assert!(
        store
            .put_stored_frame("no-such-session", stamp, std::iter::once(vec![1u8]))
            .await
            .is_err()
    );
    // Deleting the session deletes its frame.
    store.delete_session(&meta.id).await.unwrap();
    store.create_session(&meta).await.unwrap();
    assert_eq!(
        store.stored_frame_chunk(&meta.id, stamp, 0).await.unwrap(),
        None
    );
}
