//! The stored vocabulary and the test-account list, on SQLite and
//! PostgreSQL (set `DATABASE_URL`): a store created by the first schema
//! migrates with its rows kept, after which the phase column refuses
//! unknown text; test accounts recorded during a session are known after
//! the process is gone.

mod common;

use common::{TestDb, cleanup, full_session, utc};
use firsttoken_record::session::{Cleanup, SessionStatus};
use firsttoken_record::store::{CLEANUP_NOT_RUN, StoreError};
use firsttoken_record::vocab::{Destination, PhaseKind};

both_backends!(
    a_version_1_store_migrates_and_then_refuses_unknown_phases,
    a_version_1_store_with_an_unknown_phase_is_not_migrated,
    test_accounts_are_known_before_the_session_ends,
);

/// The schema exactly as version 1 created it, marked applied.
fn version_1_ddl(db: &TestDb) -> String {
    if db.is_postgres() {
        format!(
            "{}
             CREATE TABLE schema_migrations (
                 version    BIGINT PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             );
             INSERT INTO schema_migrations (version) VALUES (1);",
            include_str!("../src/store/migrations/postgres/0001_init.sql")
        )
    } else {
        format!(
            "{}
             CREATE TABLE schema_migrations (
                 version    INTEGER PRIMARY KEY NOT NULL,
                 applied_at TEXT NOT NULL
             ) STRICT;
             INSERT INTO schema_migrations VALUES (1, '2026-11-01T00:00:00.000Z');",
            include_str!("../src/store/migrations/sqlite/0001_init.sql")
        )
    }
}

const OLD_SESSION: &str =
    "INSERT INTO sessions (id, started_at, status, spec, seed, tool_version, host, provenance)
     VALUES ('old', '2026-11-01T10:00:00Z', 'complete', '{}', '7', '0.1.0', 'h', 'measured');";

/// A version-1 sample row of `phase` (`path`, `strategy` as SQL literals).
fn old_sample(seq: u32, phase: &str, path: &str, strategy: &str) -> String {
    format!(
        "INSERT INTO samples (session_id, seq, phase, path, strategy, actual_start_ms, started_at,
                              provenance, worker, warmup, connection, content_chunks, ttft_ms)
         VALUES ('old', {seq}, '{phase}', {path}, {strategy}, {seq}.0, '2026-11-01T10:00:0{seq}+01:00',
                 'measured', 0, FALSE, 'fresh', 3, 250.5);"
    )
}

async fn a_version_1_store_migrates_and_then_refuses_unknown_phases(db: TestDb) {
    let rows = [
        old_sample(0, "ping", "'ping'", "NULL"),
        old_sample(1, "warm", "'chat'", "NULL"),
        old_sample(2, "direct", "'direct'", "'latency'"),
        old_sample(3, "rate", "NULL", "NULL"),
    ];
    db.raw_exec(&format!(
        "{}{OLD_SESSION}{}",
        version_1_ddl(&db),
        rows.join("")
    ))
    .await
    .expect("the version 1 schema and rows");

    let store = db.open().await;
    assert_eq!(
        store.schema_versions().await.unwrap(),
        vec![
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
        ]
    );
    let meta = store.session("old").await.unwrap().expect("session kept");
    assert_eq!(meta.started_at, utc("2026-11-01T10:00:00.000Z"));
    let got = store.samples("old").await.unwrap();
    let kept: Vec<(u64, PhaseKind, Destination, String)> = got
        .iter()
        .map(|r| {
            assert_eq!(r.sample.ttft_ms, Some(250.5));
            (
                r.sample.seq,
                r.phase,
                r.dest.clone(),
                r.started_at.to_string(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        vec![
            (
                0,
                PhaseKind::Ping,
                Destination::Ping,
                "2026-11-01T09:00:00.000Z".into()
            ),
            (
                1,
                PhaseKind::Warm,
                Destination::App {
                    path: Some("chat".into())
                },
                "2026-11-01T09:00:01.000Z".into()
            ),
            (
                2,
                PhaseKind::Direct,
                Destination::Direct {
                    strategy: Some("latency".into())
                },
                "2026-11-01T09:00:02.000Z".into()
            ),
            (
                3,
                PhaseKind::Rate,
                Destination::App { path: None },
                "2026-11-01T09:00:03.000Z".into()
            ),
        ]
    );

    // Defect: before version 2, any text was stored as a phase.
    let bad = db
        .raw_exec(&old_sample(4, "lukewarm", "NULL", "NULL"))
        .await;
    assert!(
        bad.as_ref()
            .is_err_and(|e| e.contains("CHECK") || e.contains("phase")),
        "{bad:?}"
    );
    let empty = db.raw_exec(&old_sample(4, "", "NULL", "NULL")).await;
    assert!(empty.is_err(), "{empty:?}");
    db.raw_exec(&old_sample(4, "cold", "'chat'", "NULL"))
        .await
        .expect("a known phase is still stored");
    assert_eq!(store.samples("old").await.unwrap().len(), 5);
    // Opening again applies nothing.
    drop(store);
    assert_eq!(db.open().await.migrate().await.unwrap(), 0);
}

async fn a_version_1_store_with_an_unknown_phase_is_not_migrated(db: TestDb) {
    let rows = [
        old_sample(0, "warm", "'chat'", "NULL"),
        old_sample(1, "tepid", "'chat'", "NULL"),
    ];
    db.raw_exec(&format!(
        "{}{OLD_SESSION}{}",
        version_1_ddl(&db),
        rows.join("")
    ))
    .await
    .expect("the version 1 schema and rows");
    let err = firsttoken_record::store::Store::open(db.url())
        .await
        .expect_err("an unknown phase stops the migration");
    let text = err.to_string();
    assert!(text.contains("\"tepid\""), "{text}");
    assert!(text.contains("'warm'"), "names the known phases: {text}");
    // Nothing was half-applied: the rows and version 1 are intact.
    let versions = db
        .raw_texts("SELECT CAST(version AS TEXT) FROM schema_migrations")
        .await;
    assert_eq!(versions, ["1"]);
    let phases = db.raw_texts("SELECT phase FROM samples ORDER BY seq").await;
    assert_eq!(phases, ["warm", "tepid"]);
}

async fn test_accounts_are_known_before_the_session_ends(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261130T023000Z-acct", "2026-11-30T02:30:00.000Z");
    store.create_session(&meta).await.unwrap();
    let other = full_session("20261130T023000Z-none", "2026-11-30T02:31:00.000Z");
    store.create_session(&other).await.unwrap();
    for id in ["u-17", "u-3", "u-17", "u-42"] {
        store.add_test_account(&meta.id, id).await.unwrap();
    }
    let missing = store.add_test_account("no-such-session", "u-1").await;
    assert!(
        matches!(missing, Err(StoreError::NoSession { .. })),
        "{missing:?}"
    );
    // The process dies here: the store is dropped, the session never finishes.
    drop(store);

    let store = db.open().await;
    let ids = ["u-17", "u-3", "u-42"].map(String::from).to_vec();
    assert_eq!(store.test_accounts(&meta.id).await.unwrap(), ids);
    let want = Some(Cleanup {
        created_ids: ids.clone(),
        error: Some(CLEANUP_NOT_RUN.into()),
        ..Cleanup::default()
    });
    let got = store.session(&meta.id).await.unwrap().unwrap();
    assert_eq!(got.cleanup, want, "found by id");
    let got = store.session("20261130T023000Z-ac").await.unwrap().unwrap();
    assert_eq!(got.cleanup, want, "found by prefix");
    let listed = store.sessions().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].cleanup, want, "listed");
    assert_eq!(
        listed[0].cleanup, None,
        "a session without accounts has none"
    );

    // A later cleanup (e.g. `firsttoken cleanup`) is stored and keeps every id.
    let mut done = cleanup();
    done.created_ids = vec!["u-3".into(), "u-99".into()];
    store
        .finish_session(
            &meta.id,
            &SessionStatus::Complete,
            utc("2026-11-30T02:40:00.000Z"),
            Some(&done),
            None,
        )
        .await
        .unwrap();
    let got = store.session(&meta.id).await.unwrap().unwrap();
    let c = got.cleanup.unwrap();
    assert_eq!(c.created_ids, ["u-3", "u-99", "u-17", "u-42"]);
    assert_eq!(
        (c.deleted, c.residual, c.error),
        (done.deleted, done.residual, done.error)
    );
}
