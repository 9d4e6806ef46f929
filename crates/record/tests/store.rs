//! The store, the same tests on SQLite and PostgreSQL (set `DATABASE_URL`).

mod common;

use common::{TestDb, cleanup, full_row, full_session, null_row, utc};
use firsttoken_record::export;
use firsttoken_record::session::{Provenance, SessionStatus};
use firsttoken_record::store::{
    ABANDONED_REASON, REDACTED, SAMPLE_COLUMNS, Store, StoreError, host_name,
};
use firsttoken_record::vocab::{PhaseKind, UtcTime};

both_backends!(
    round_trip_with_every_field_and_with_nulls,
    sessions_are_listed_newest_first_and_found_by_prefix,
    finish_records_status_end_cleanup_and_lag,
    provenance_is_enforced_by_the_schema,
    export_jsonl_then_import_keeps_numbers_and_marks_imported,
    csv_export_has_a_header_and_one_record_per_sample,
    running_migrations_again_is_a_no_op,
    concurrent_writers_lose_nothing,
    abandoned_running_sessions_become_partial_on_next_open,
    a_store_that_refuses_writes_stops_with_earlier_samples_safe,
    values_that_would_not_read_back_are_refused,
    a_deleted_session_takes_its_rows_and_leaves_the_others,
    a_session_read_in_two_parts_reads_every_sample_once_in_order,
);

async fn round_trip_with_every_field_and_with_nulls(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261130T023000Z-aaaa", "2026-11-30T02:30:00.000Z");
    store.create_session(&meta).await.unwrap();
    // Appended out of start order: samples() returns them by actual start.
    let late = full_row(&meta.id, 1, 250.0);
    let early = null_row(&meta.id, 0, 10.0);
    let mut middle = full_row(&meta.id, 2, 100.0);
    middle.sample.error = None;
    middle.sample.warmup = false;
    for r in [&late, &early, &middle] {
        store.append_sample(r).await.unwrap();
    }

    let got = store
        .session(&meta.id)
        .await
        .unwrap()
        .expect("session stored");
    let mut want = meta.clone();
    want.pid = Some(std::process::id());
    want.spec["target"]["headers"]["Authorization"] = REDACTED.into();
    assert_eq!(got, want);
    assert!(
        !got.spec.to_string().contains("sk-live"),
        "secret reached the store"
    );

    let rows = store.samples(&meta.id).await.unwrap();
    assert_eq!(rows, vec![early, middle, late]);
    assert!(store.samples("no-such-session").await.unwrap().is_empty());
}

/// Seven samples, three of them starting at the same instant (the split
/// falls among them): read in two parts at once, the parts in order hold
/// every sample once, in the order one scan reads them; below the size
/// that splits, one part.
async fn a_session_read_in_two_parts_reads_every_sample_once_in_order(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261130T023000Z-part", "2026-11-30T02:30:00.000Z");
    store.create_session(&meta).await.unwrap();
    for (seq, at) in [
        (0, 50.0),
        (1, 10.0),
        (2, 30.0),
        (3, 30.0),
        (4, 30.0),
        (5, 70.0),
        (6, 20.0),
    ] {
        store
            .append_sample(&full_row(&meta.id, seq, at))
            .await
            .unwrap();
    }
    let whole = store
        .scan_views(&meta.id, Vec::new(), |seqs, v| {
            seqs.push(v.seq);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(whole, [1, 6, 2, 3, 4, 0, 5]);
    let collect = |seqs: &mut Vec<u64>, v: &firsttoken_record::SampleView<'_>| {
        seqs.push(v.seq);
        Ok(())
    };
    let parts = store
        .scan_views_parts(&meta.id, 2, Vec::new(), Vec::new, collect)
        .await
        .unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0], [1, 6, 2], "the first half, up to the split");
    assert_eq!(parts.concat(), whole);
    // Fewer samples than the split needs: one part, continuing `first`.
    let one = store
        .scan_views_parts(&meta.id, 8, vec![99], Vec::new, collect)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0][1..], whole[..]);
    assert_eq!(one[0][0], 99);
}

async fn sessions_are_listed_newest_first_and_found_by_prefix(db: TestDb) {
    let store = db.open().await;
    for (id, at) in [
        ("20261130T010000Z-1111", "2026-11-30T01:00:00.000Z"),
        ("20261130T030000Z-3333", "2026-11-30T03:00:00.000Z"),
        ("20261130T020000Z-2222", "2026-11-30T02:00:00.000Z"),
        ("20261130T020000Z-2222x", "2026-11-30T02:00:00.500Z"),
    ] {
        store.create_session(&full_session(id, at)).await.unwrap();
    }
    let ids: Vec<String> = store
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids,
        [
            "20261130T030000Z-3333",
            "20261130T020000Z-2222x",
            "20261130T020000Z-2222",
            "20261130T010000Z-1111"
        ]
    );

    let found = store.session("20261130T03").await.unwrap().unwrap();
    assert_eq!(found.id, "20261130T030000Z-3333");
    // An exact id wins over longer ids it is a prefix of.
    let exact = store
        .session("20261130T020000Z-2222")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exact.id, "20261130T020000Z-2222");
    match store.session("20261130T02").await {
        Err(StoreError::AmbiguousSession { matches, .. }) => assert_eq!(matches.len(), 2),
        other => panic!("expected an ambiguous prefix, got {other:?}"),
    }
    assert!(store.session("1999").await.unwrap().is_none());
    assert!(store.session("").await.unwrap().is_none());
    // LIKE wildcards are not wildcards here.
    assert!(store.session("2026%").await.unwrap().is_none());
}

async fn finish_records_status_end_cleanup_and_lag(db: TestDb) {
    let store = db.open().await;
    let a = full_session("s-complete", "2026-11-30T01:00:00.000Z");
    let b = full_session("s-partial", "2026-11-30T02:00:00.000Z");
    store.create_session(&a).await.unwrap();
    store.create_session(&b).await.unwrap();

    store
        .finish_session(
            &a.id,
            &SessionStatus::Complete,
            utc("2026-11-30T01:05:00.000Z"),
            Some(&cleanup()),
            Some(12.5),
        )
        .await
        .unwrap();
    let got = store.session(&a.id).await.unwrap().unwrap();
    assert_eq!(got.status, SessionStatus::Complete);
    assert_eq!(got.ended_at, Some(utc("2026-11-30T01:05:00.000Z")));
    assert_eq!(got.cleanup, Some(cleanup()));
    assert_eq!(got.client_lag_p99_ms, Some(12.5));

    // Cleanup stored separately survives a finish that passes none.
    let mut failed = cleanup();
    failed.residual = Some(3);
    failed.error = Some("DELETE timed out, 3 rows left".into());
    store.set_cleanup(&b.id, &failed).await.unwrap();
    let stopped = SessionStatus::Partial {
        reason: "Ctrl-C after 120 of 323 requests".into(),
    };
    store
        .finish_session(&b.id, &stopped, utc("2026-11-30T02:01:00.000Z"), None, None)
        .await
        .unwrap();
    let got = store.session(&b.id).await.unwrap().unwrap();
    assert_eq!(got.status, stopped);
    assert_eq!(got.cleanup, Some(failed));
    assert_eq!(got.client_lag_p99_ms, None);

    let missing = store
        .finish_session("nope", &SessionStatus::Complete, UtcTime::EPOCH, None, None)
        .await;
    assert!(
        matches!(missing, Err(StoreError::NoSession { .. })),
        "{missing:?}"
    );
    let missing = store.set_cleanup("nope", &cleanup()).await;
    assert!(
        matches!(missing, Err(StoreError::NoSession { .. })),
        "{missing:?}"
    );
}

async fn provenance_is_enforced_by_the_schema(db: TestDb) {
    let store = db.open().await;
    store
        .create_session(&full_session("s1", "2026-11-30T01:00:00.000Z"))
        .await
        .unwrap();
    let insert = |provenance: &str| {
        format!(
            "INSERT INTO samples (session_id, seq, phase, actual_start_ms, started_at, provenance,
                                  worker, warmup, connection, content_chunks)
             VALUES ('s1', 0, 'warm', 1.0, '2026-11-30T01:00:00.000Z', {provenance}, 0, FALSE, 'fresh', 0)"
        )
    };
    let bad = db.raw_exec(&insert("'guessed'")).await;
    assert!(
        bad.as_ref().is_err_and(|e| e.contains("provenance")),
        "{bad:?}"
    );
    // Issue 28: an engine timing from an engine outside the vocabulary.
    let engine = |source: &str| {
        format!(
            "INSERT INTO samples (session_id, seq, phase, actual_start_ms, started_at, provenance,
                                  worker, warmup, connection, content_chunks, engine)
             VALUES ('s1', 0, 'warm', 1.0, '2026-11-30T01:00:00.000Z', 'measured', 0, FALSE, 'fresh', 0,
                     '{{\"source\": \"{source}\", \"prompt_ms\": 1}}')"
        )
    };
    let bad = db.raw_exec(&engine("guessed")).await;
    assert!(bad.as_ref().is_err_and(|e| e.contains("engine")), "{bad:?}");
    let null = db.raw_exec(&insert("NULL")).await;
    assert!(
        null.as_ref().is_err_and(|e| e.contains("provenance")),
        "{null:?}"
    );
    let bad_session = db
        .raw_exec(
            "INSERT INTO sessions (id, started_at, status, spec, seed, tool_version, host, provenance)
             VALUES ('s2', 'x', 'running', '{}', '1', 'v', 'h', 'made-up')",
        )
        .await;
    assert!(
        bad_session
            .as_ref()
            .is_err_and(|e| e.contains("provenance")),
        "{bad_session:?}"
    );
    db.raw_exec(&insert("'measured'")).await.unwrap();
    let rows = store.samples("s1").await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].provenance, Provenance::Measured);
}

async fn export_jsonl_then_import_keeps_numbers_and_marks_imported(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261130T023000Z-orig", "2026-11-30T02:30:00.000Z");
    store.create_session(&meta).await.unwrap();
    for (i, r) in [full_row(&meta.id, 0, 1.0), null_row(&meta.id, 1, 2.0)]
        .iter()
        .enumerate()
    {
        let mut r = r.clone();
        r.sample.seq = i as u64;
        store.append_sample(&r).await.unwrap();
    }
    store
        .finish_session(
            &meta.id,
            &SessionStatus::Complete,
            utc("2026-11-30T02:31:00.000Z"),
            None,
            Some(3.0),
        )
        .await
        .unwrap();
    let stored = store.session(&meta.id).await.unwrap().unwrap();
    let rows = store.samples(&meta.id).await.unwrap();

    let mut buf = Vec::new();
    export::write_session_jsonl(&stored, &rows, &mut buf).unwrap();
    let (sessions, read_rows) = export::read_jsonl(buf.as_slice()).unwrap();
    assert_eq!(sessions, vec![stored.clone()]);
    assert_eq!(read_rows, rows);

    let groups = export::group_for_import(sessions, read_rows).unwrap();
    let (m, r) = &groups[0];
    let imported = store.insert_imported(m, r).await.unwrap();
    assert_ne!(imported.id, stored.id);
    assert_eq!(imported.provenance, Provenance::Imported);
    assert_eq!(imported.labels.tags["imported_from"], stored.id);
    assert_eq!(imported.labels.tags["original_provenance"], "measured");
    assert_eq!(imported.pid, None);

    let back = store.session(&imported.id).await.unwrap().unwrap();
    assert_eq!(back, imported);
    assert_eq!(back.spec, stored.spec);
    assert_eq!(back.seed, stored.seed);
    assert_eq!(back.status, SessionStatus::Complete);
    let back_rows = store.samples(&imported.id).await.unwrap();
    assert_eq!(back_rows.len(), rows.len());
    for (b, o) in back_rows.iter().zip(&rows) {
        assert_eq!(b.provenance, Provenance::Imported);
        assert_eq!(b.session_id, imported.id);
        assert_eq!(b.sample, o.sample, "numbers survive export and import");
        assert_eq!(b.actual_start_ms, o.actual_start_ms);
        assert_eq!(b.intended_start_ms, o.intended_start_ms);
    }
    // The original is untouched.
    assert_eq!(store.samples(&meta.id).await.unwrap(), rows);
}

/// Parses RFC 4180 CSV into records of fields.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let (mut record, mut field) = (Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        !quoted && field.is_empty() && record.is_empty(),
        "CSV ends with CRLF"
    );
    records
}

async fn csv_export_has_a_header_and_one_record_per_sample(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s-csv", "2026-11-30T01:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let rows_in = [
        full_row(&meta.id, 0, 1.0),
        null_row(&meta.id, 1, 2.0),
        full_row(&meta.id, 2, 3.0),
    ];
    for r in &rows_in {
        store.append_sample(r).await.unwrap();
    }
    let rows = store.samples(&meta.id).await.unwrap();
    let mut buf = Vec::new();
    export::write_csv(&rows, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();

    let records = parse_csv(&text);
    assert_eq!(
        records.len(),
        1 + rows.len(),
        "header + one record per sample"
    );
    assert_eq!(records[0], SAMPLE_COLUMNS);
    let col = |name: &str| SAMPLE_COLUMNS.iter().position(|c| *c == name).unwrap();
    let full = &records[1];
    assert_eq!(
        full[col("error_message")],
        rows_in[0].sample.error.as_ref().unwrap().message
    );
    assert_eq!(full[col("error_kind")], "stream_error");
    assert_eq!(full[col("request_id")], "req_01H,\"x\"");
    assert_eq!(full[col("provenance")], "measured");
    assert_eq!(full[col("warmup")], "true");
    assert_eq!(full[col("connect_ms")].parse::<f64>().unwrap(), 1.0 / 3.0);
    let st: serde_json::Value = serde_json::from_str(&full[col("server_timing")]).unwrap();
    assert_eq!(st["llm"], 180.0);
    let tls: serde_json::Value = serde_json::from_str(&full[col("tls")]).unwrap();
    assert_eq!(tls["kx_group"], "X25519MLKEM768");
    let nulls = &records[2];
    assert_eq!(nulls[col("ttft_ms")], "");
    assert_eq!(nulls[col("server_timing")], "");
    assert_eq!(nulls[col("provenance")], "emulated");
    // A sample without newlines in its text is exactly one physical line.
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert!(lines[2].starts_with("s-csv,1,warm,"), "{}", lines[2]);
    assert_eq!(parse_csv(&format!("{}\r\n", lines[2]))[0], *nulls);
}

async fn running_migrations_again_is_a_no_op(db: TestDb) {
    let store = db.open().await;
    assert_eq!(
        store.schema_versions().await.unwrap(),
        vec![
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
        ]
    );
    let applied_before = db
        .raw_texts("SELECT CAST(applied_at AS TEXT) FROM schema_migrations")
        .await;
    assert_eq!(store.migrate().await.unwrap(), 0);
    drop(store);
    let again = db.open().await;
    assert_eq!(again.migrate().await.unwrap(), 0);
    assert_eq!(
        again.schema_versions().await.unwrap(),
        vec![
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
        ]
    );
    let applied_after = db
        .raw_texts("SELECT CAST(applied_at AS TEXT) FROM schema_migrations")
        .await;
    assert_eq!(applied_before, applied_after);
}

async fn concurrent_writers_lose_nothing(db: TestDb) {
    const N: u64 = 150;
    // Two independent handles (two connections, as two processes would have).
    let (a, b) = tokio::join!(db.open(), db.open());
    let sa = full_session("writer-a", "2026-11-30T01:00:00.000Z");
    let sb = full_session("writer-b", "2026-11-30T01:00:00.000Z");
    a.create_session(&sa).await.unwrap();
    b.create_session(&sb).await.unwrap();
    let write = |store: Store, id: String| {
        tokio::spawn(async move {
            for seq in 0..N {
                store
                    .append_sample(&full_row(&id, seq, seq as f64))
                    .await
                    .unwrap();
            }
        })
    };
    let (ra, rb) = tokio::join!(
        write(a.clone(), sa.id.clone()),
        write(b.clone(), sb.id.clone())
    );
    ra.unwrap();
    rb.unwrap();
    for (store, id) in [(&a, &sa.id), (&b, &sb.id)] {
        let seqs: Vec<u64> = store
            .samples(id)
            .await
            .unwrap()
            .iter()
            .map(|r| r.sample.seq)
            .collect();
        assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "session {id}");
    }
}

async fn abandoned_running_sessions_become_partial_on_next_open(db: TestDb) {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();

    let store = db.open().await;
    let mut dead = full_session("dead-owner", "2026-11-30T01:00:00.000Z");
    dead.pid = Some(dead_pid);
    let mut alive = full_session("live-owner", "2026-11-30T01:00:01.000Z");
    alive.pid = Some(std::process::id());
    let mut elsewhere = full_session("other-host", "2026-11-30T01:00:02.000Z");
    elsewhere.pid = Some(dead_pid);
    elsewhere.host = format!("not-{}", host_name());
    let mut finished = full_session("finished", "2026-11-30T01:00:03.000Z");
    finished.pid = Some(dead_pid);
    for m in [&dead, &alive, &elsewhere, &finished] {
        store.create_session(m).await.unwrap();
    }
    store
        .finish_session(
            &finished.id,
            &SessionStatus::Complete,
            utc("2026-11-30T01:10:00.000Z"),
            None,
            None,
        )
        .await
        .unwrap();
    store
        .append_sample(&full_row(&dead.id, 0, 1.0))
        .await
        .unwrap();

    let reopened = db.open().await;
    let status = |id: &'static str| {
        let s = reopened.clone();
        async move { s.session(id).await.unwrap().unwrap().status }
    };
    assert_eq!(
        status("dead-owner").await,
        SessionStatus::Partial {
            reason: ABANDONED_REASON.into()
        }
    );
    assert_eq!(status("live-owner").await, SessionStatus::Running);
    assert_eq!(status("other-host").await, SessionStatus::Running);
    assert_eq!(status("finished").await, SessionStatus::Complete);
    assert_eq!(reopened.samples("dead-owner").await.unwrap().len(), 1);
    assert!(
        reopened
            .mark_abandoned(&host_name(), "again")
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_store_that_refuses_writes_stops_with_earlier_samples_safe(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s-refused", "2026-11-30T01:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    for seq in 0..3 {
        store
            .append_sample(&full_row(&meta.id, seq, seq as f64))
            .await
            .unwrap();
    }
    // Make every further sample insert fail, as a full disk would.
    let trigger = if db.is_postgres() {
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT ON samples FOR EACH ROW EXECUTE FUNCTION refuse();"
    } else {
        "CREATE TRIGGER refuse BEFORE INSERT ON samples BEGIN SELECT RAISE(ABORT, 'could not extend file'); END;"
    };
    db.raw_exec(trigger).await.unwrap();
    let err = store
        .append_sample(&full_row(&meta.id, 3, 3.0))
        .await
        .expect_err("the insert is refused");
    let text = err.to_string();
    assert!(text.contains("append sample"), "{text}");
    assert!(text.contains("could not extend file"), "{text}");
    assert!(!err.is_connection(), "{text}");
    if db.is_postgres() {
        assert_eq!(err.hint(), Some("disk full on the PostgreSQL server?"));
        assert!(!text.contains("password"), "{text}");
    } else {
        assert!(text.contains(db.url()), "{text}");
    }
    // What was committed before is intact, and the session can still be closed.
    assert_eq!(store.samples(&meta.id).await.unwrap().len(), 3);
    let reason = SessionStatus::Partial {
        reason: format!("store error: {text}"),
    };
    store
        .finish_session(
            &meta.id,
            &reason,
            utc("2026-11-30T01:01:00.000Z"),
            None,
            None,
        )
        .await
        .unwrap();
}

async fn values_that_would_not_read_back_are_refused(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("s-nan", "2026-11-30T01:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let mut row = full_row(&meta.id, 0, 1.0);
    row.sample.ttft_ms = Some(f64::NAN);
    let err = store.append_sample(&row).await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("ttft_ms"), "{err}");
    let mut row = full_row(&meta.id, 0, 1.0);
    if let Some(e) = row.sample.engine.as_mut() {
        e.prompt_ms = Some(-3.0);
    }
    let err = store.append_sample(&row).await.unwrap_err();
    assert!(err.to_string().contains("engine.prompt_ms"), "{err}");
    let mut row = full_row(&meta.id, 0, 1.0);
    row.sample.seq = u64::MAX;
    let err = store.append_sample(&row).await.unwrap_err();
    assert!(err.to_string().contains("seq"), "{err}");
    // A destination must fit the phase: a warm request does not go to the provider.
    let mut row = full_row(&meta.id, 0, 1.0);
    row.phase = PhaseKind::Warm;
    let err = store.append_sample(&row).await.unwrap_err();
    assert!(
        err.to_string().contains("a warm request cannot go to"),
        "{err}"
    );
    // Finite but impossible (issue 29, item 4): once stored, every report
    // over the session would fail.
    for (field, v) in [("ttft_ms", -50.0), ("ttft_ms", 1e308), ("e2e_ms", -1e308)] {
        let mut row = full_row(&meta.id, 0, 1.0);
        match field {
            "ttft_ms" => row.sample.ttft_ms = Some(v),
            _ => row.sample.e2e_ms = Some(v),
        }
        let err = store.append_sample(&row).await.unwrap_err().to_string();
        assert!(err.contains(field) && err.contains("a day"), "{err}");
        assert!(
            !err.contains("0000000000"),
            "the number printed in full: {err}"
        );
    }
    let mut row = full_row(&meta.id, 0, 1.0);
    row.sample.server_timing = Some([("db".to_owned(), -5.0)].into_iter().collect());
    let err = store.append_sample(&row).await.unwrap_err().to_string();
    assert!(err.contains("server_timing"), "{err}");
    let mut row = full_row(&meta.id, 0, 1.0);
    row.concurrency = Some(0);
    let err = store.append_sample(&row).await.unwrap_err().to_string();
    assert!(err.contains("concurrency"), "{err}");
    assert!(store.samples(&meta.id).await.unwrap().is_empty());
}

async fn a_deleted_session_takes_its_rows_and_leaves_the_others(db: TestDb) {
    let store = db.open().await;
    let gone = full_session("20261130T030000Z-dddd", "2026-11-30T03:00:00.000Z");
    let kept = full_session("20261130T031000Z-kkkk", "2026-11-30T03:10:00.000Z");
    for m in [&gone, &kept] {
        store.create_session(m).await.unwrap();
        for seq in 0..3 {
            let mut row = full_row(&m.id, seq, seq as f64);
            row.sample.error = None;
            store.append_sample(&row).await.unwrap();
        }
        store.add_test_account(&m.id, "acct-1").await.unwrap();
    }
    let done = store.delete_session(&gone.id).await.unwrap();
    assert_eq!((done.samples, done.test_accounts), (3, 1), "{done:?}");
    assert!(store.session(&gone.id).await.unwrap().is_none());
    assert!(store.samples(&gone.id).await.unwrap().is_empty());
    assert!(store.test_accounts(&gone.id).await.unwrap().is_empty());
    assert_eq!(store.samples(&kept.id).await.unwrap().len(), 3);
    assert_eq!(store.test_accounts(&kept.id).await.unwrap(), vec!["acct-1"]);
    let again = store.delete_session(&gone.id).await.unwrap_err();
    assert!(matches!(again, StoreError::NoSession { .. }), "{again}");
}

#[tokio::test]
async fn postgres_reconnects_after_its_connection_is_killed() {
    common::run(TestDb::postgres().await, |db| async move {
        let TestDb::Postgres { admin_url, schema, .. } = &db else { unreachable!() };
        let store = db.open().await;
        let meta = full_session("s-reconnect", "2026-11-30T01:00:00.000Z");
        store.create_session(&meta).await.unwrap();
        store.append_sample(&full_row(&meta.id, 0, 0.0)).await.unwrap();

        // 1. Killed from outside between two samples.
        let admin = common::pg_connect(admin_url).await;
        let killed = admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[schema],
            )
            .await
            .unwrap();
        assert!(killed >= 1, "the store's connection was found");
        store.append_sample(&full_row(&meta.id, 1, 1.0)).await.unwrap();

        // 2. Killed in the middle of the insert (the connection ends itself
        // from a trigger, once: sequences are not rolled back).
        db.raw_exec(
            "CREATE SEQUENCE kills;
             CREATE TABLE kill_plan (upto BIGINT NOT NULL);
             INSERT INTO kill_plan VALUES (1);
             CREATE FUNCTION kill_me() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF nextval('kills') <= (SELECT upto FROM kill_plan) THEN
                     PERFORM pg_terminate_backend(pg_backend_pid());
                 END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER kill_me BEFORE INSERT ON samples FOR EACH ROW EXECUTE FUNCTION kill_me();",
        )
        .await
        .unwrap();
        let before = store.reconnects();
        store.append_sample(&full_row(&meta.id, 2, 2.0)).await.unwrap();
        assert_eq!(store.reconnects(), before + 1, "retried once on a fresh connection");

        // 3. Killed on every attempt: a clean error, nothing half-written.
        db.raw_exec("UPDATE kill_plan SET upto = 1000000").await.unwrap();
        let err = store
            .append_sample(&full_row(&meta.id, 3, 3.0))
            .await
            .expect_err("a connection that keeps dropping stops the session");
        assert!(err.is_connection(), "{err}");
        db.raw_exec("DROP TRIGGER kill_me ON samples").await.unwrap();

        let seqs: Vec<u64> = store
            .samples(&meta.id)
            .await
            .unwrap()
            .iter()
            .map(|r| r.sample.seq)
            .collect();
        assert_eq!(seqs, [0, 1, 2], "nothing lost, nothing doubled");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_opened_by_two_processes_at_once_migrates_once() {
    common::run(TestDb::postgres().await, |db| async move {
        let (a, b, c) = tokio::join!(
            Store::open(db.url()),
            Store::open(db.url()),
            Store::open(db.url())
        );
        for s in [a, b, c] {
            assert_eq!(
                s.unwrap().schema_versions().await.unwrap(),
                vec![
                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
                ]
            );
        }
    })
    .await;
}

#[tokio::test]
async fn unreachable_stores_fail_with_a_hint() {
    let err = Store::open("postgres://ft:hunter2@127.0.0.1:1/ft?connect_timeout=5")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(!text.contains("hunter2"), "password leaked: {text}");
    assert!(text.contains("postgres://ft:***@127.0.0.1:1/ft"), "{text}");
    assert_eq!(err.hint(), Some("is PostgreSQL running on 127.0.0.1:1?"));
    assert!(err.is_connection());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing-dir").join("firsttoken.db");
    let err = Store::open(&path.display().to_string()).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("missing-dir"), "{text}");
    assert!(
        err.hint().is_some_and(|h| h.contains("directory")),
        "{text}"
    );
}
