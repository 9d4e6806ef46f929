//! Runs across agents in the store (schema version 7), on SQLite and (when
//! `DATABASE_URL` is set) PostgreSQL: the first agent's run row wins, the
//! members read back as written, and the store's clock gives an offset.

mod common;

use common::{TestDb, full_row, full_session, utc};
use firsttoken_record::run::{ClockOffset, RunInfo, RunMember, RunState, run_state};
use firsttoken_record::session::SessionStatus;

fn run_info(segments: u32, hash: &str) -> RunInfo {
    RunInfo {
        run_id: "r-1".into(),
        created_at: utc("2026-12-01T10:00:00.000Z"),
        segments,
        planned_requests: 32,
        config_hash: hash.into(),
        start_at: Some(utc("2026-12-01T10:00:02.500Z")),
    }
}

async fn the_first_agent_writes_the_run_and_members_read_back(db: TestDb) {
    let store = db.open().await;
    let first = store.join_run(&run_info(4, "aa")).await.unwrap();
    assert_eq!(first, run_info(4, "aa"));
    // A later agent with other ideas gets the stored run back, to refuse.
    let second = store.join_run(&run_info(3, "bb")).await.unwrap();
    assert_eq!(second, run_info(4, "aa"));
    assert_eq!(store.runs().await.unwrap(), vec![run_info(4, "aa")]);
    assert!(store.run("nope").await.unwrap().is_none());

    let mut metas = Vec::new();
    for (i, id) in ["20261201T100000Z-0000", "20261201T100000Z-0001"]
        .iter()
        .enumerate()
    {
        let mut m = full_session(id, "2026-12-01T10:00:00.000Z");
        m.labels.vantage = format!("agent-{i}");
        store.create_session(&m).await.unwrap();
        let member = RunMember {
            session_id: m.id.clone(),
            run_id: "r-1".into(),
            segment: i as u32,
            segments: 4,
            segment_requests: 8,
            ranges: vec![0..3, 5..8],
            clock: Some(ClockOffset {
                offset_ms: -1.25,
                uncertainty_ms: 0.5,
            }),
            began_at_ms: None,
            heartbeat_at_ms: Some(1_796_000_000_000.0),
            heartbeat_every_ms: Some(500.0),
        };
        store.add_run_member(&member).await.unwrap();
        // Idempotent: a retry after a lost reply stores it once.
        store.add_run_member(&member).await.unwrap();
        metas.push(m);
    }
    store
        .set_run_began(&metas[1].id, 1_796_000_000_123.25)
        .await
        .unwrap();
    store
        .run_heartbeat(&metas[0].id, 1_796_000_001_000.5)
        .await
        .unwrap();
    let members = store.run_members("r-1").await.unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[0].heartbeat_at_ms, Some(1_796_000_001_000.5));
    assert_eq!(members[1].heartbeat_at_ms, Some(1_796_000_000_000.0));
    assert_eq!(members[1].heartbeat_every_ms, Some(500.0));
    assert_eq!(members[0].ranges, vec![0..3, 5..8]);
    assert_eq!(members[0].index_of(3), Some(5));
    assert_eq!(members[1].began_at_ms, Some(1_796_000_000_123.25));
    assert_eq!(members[1].clock.unwrap().offset_ms, -1.25);

    // Two of four segments, both running: the run is running; finished
    // complete, it is partial and names the two segments no agent ran.
    let pairs = |status: SessionStatus| {
        members
            .iter()
            .cloned()
            .zip(metas.iter().cloned().map(|mut m| {
                m.status = status.clone();
                m
            }))
            .collect::<Vec<_>>()
    };
    let info = run_info(4, "aa");
    // Agent 1's last beat was at …000.0 ms, agent 0's a second later; each
    // promised one every 500 ms and is silent past 4 beats + 0.5 ms of clock.
    let beat = 1_796_000_000_000.0;
    assert_eq!(
        run_state(&info, &pairs(SessionStatus::Running), beat + 2000.5),
        RunState::Running
    );
    // Agent 1 fell silent, agent 0 still beats: running.
    assert_eq!(
        run_state(&info, &pairs(SessionStatus::Running), beat + 2001.0),
        RunState::Running
    );
    // Both silent: partial, each named with how long it has been silent.
    let RunState::Partial { missing } =
        run_state(&info, &pairs(SessionStatus::Running), beat + 3501.0)
    else {
        panic!("partial")
    };
    assert_eq!(
        missing.iter().map(|m| m.segment).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(missing[0].agents[0].silent_for_ms, Some(2500.5));
    assert_eq!(missing[1].agents[0].silent_for_ms, Some(3501.0));
    assert!(missing[1].agents[0].agent.starts_with("agent-1@"));
    let now = beat + 1e9;
    let RunState::Partial { missing } = run_state(&info, &pairs(SessionStatus::Complete), now)
    else {
        panic!("partial")
    };
    assert_eq!(
        missing.iter().map(|m| m.segment).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(missing.iter().all(|m| m.agents.is_empty()));
    let RunState::Partial { missing } = run_state(
        &info,
        &pairs(SessionStatus::Partial {
            reason: "killed".into(),
        }),
        now,
    ) else {
        panic!("partial")
    };
    assert!(
        missing[0].agents[0].agent.starts_with("agent-0@"),
        "{missing:?}"
    );
    assert_eq!(
        missing[0].agents[0].silent_for_ms, None,
        "stopped, not silent"
    );

    // A silent agent's session is marked partial once, only while running.
    assert!(
        store
            .mark_silent(&metas[1].id, "agent silent")
            .await
            .unwrap()
    );
    assert!(!store.mark_silent(&metas[1].id, "again").await.unwrap());
    let m = store.session(&metas[1].id).await.unwrap().unwrap();
    assert_eq!(
        m.status,
        SessionStatus::Partial {
            reason: "agent silent".into()
        }
    );
    // Counting reads keys only: (seq, warm-up) in seq order.
    for (seq, warmup) in [(2, false), (0, true), (1, false)] {
        let mut r = full_row(&metas[0].id, seq, seq as f64 * 10.0);
        r.sample.warmup = warmup;
        store.append_sample(&r).await.unwrap();
    }
    assert_eq!(
        store.sample_keys(&metas[0].id).await.unwrap(),
        vec![(0, true), (1, false), (2, false)]
    );
    assert!(store.sample_keys(&metas[1].id).await.unwrap().is_empty());

    // The store's clock, read once: near this machine's.
    let mine = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0;
    let theirs = store.store_now_ms().await.unwrap();
    assert!((theirs - mine).abs() < 1000.0, "{theirs} vs {mine}");

    // The store's clock: PostgreSQL's, within a generous bound of ours
    // (same machine); SQLite's offset is zero by definition.
    let c = store.clock_offset(8).await.unwrap().expect("an offset");
    assert!(
        c.uncertainty_ms >= 0.0 && c.uncertainty_ms < 1000.0,
        "{c:?}"
    );
    assert!(c.offset_ms.abs() < 1000.0, "{c:?}");
}

both_backends!(the_first_agent_writes_the_run_and_members_read_back);
