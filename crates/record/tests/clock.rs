//! The arrival clock and its companions in the store (schema version 6),
//! the same tests on SQLite and PostgreSQL (set `DATABASE_URL`): a sample's
//! clock, user-space first-token stamp, client lag and shared-read count
//! come back as stored, and a clock outside the vocabulary is refused by
//! the database itself.

mod common;

use common::{TestDb, full_session};
use firsttoken_record::Clock;

both_backends!(
    the_clock_fields_round_trip,
    the_database_refuses_an_unknown_clock,
);

async fn the_clock_fields_round_trip(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T150000Z-clock", "2026-12-01T15:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let kernel = common::full_row(&meta.id, 0, 10.0);
    assert_eq!(kernel.sample.clock, Some(Clock::Kernel));
    let mut user = common::full_row(&meta.id, 1, 20.0);
    user.sample.clock = Some(Clock::User);
    user.sample.client_lag_ms = None;
    let bare = common::null_row(&meta.id, 2, 30.0);
    for r in [&kernel, &user, &bare] {
        store.append_sample(r).await.unwrap();
    }
    let back = store.samples(&meta.id).await.unwrap();
    assert_eq!(back, vec![kernel, user, bare]);
}

async fn the_database_refuses_an_unknown_clock(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T150001Z-clock", "2026-12-01T15:00:01.000Z");
    store.create_session(&meta).await.unwrap();
    store
        .append_sample(&common::full_row(&meta.id, 0, 10.0))
        .await
        .unwrap();
    drop(store);
    let refused = db.raw_exec("UPDATE samples SET clock = 'tsc'").await;
    assert!(
        refused.is_err(),
        "a clock outside the vocabulary was stored"
    );
    db.raw_exec("UPDATE samples SET clock = 'user'")
        .await
        .expect("a known clock is accepted");
}
