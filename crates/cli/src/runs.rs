//! `firsttoken runs` and the loading behind `report --run`: the sessions of
//! a run across agents, pooled from their raw rows.
//!
//! Pooling never averages per-agent figures: the rows of every agent go
//! into one frame, so percentiles are computed from the union of rows.
//! Each planned request of a run counts once: a segment request index
//! stored by several sessions of its segment (a rerun repeats a step that
//! was cut short) is taken from the newest session.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use firsttoken_record::run::{RunStart, run_start};
use firsttoken_record::run::{RunInfo, RunMember, RunState, run_state};
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::store::{Store, mask_url};

use crate::report::Loaded;
use crate::session::DEFAULT_STORE;

/// `firsttoken runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Result store: a SQLite file or a postgres:// URL.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
}

/// A run with its members, state and counts.
pub struct RunLoaded {
    /// The run row.
    pub info: RunInfo,
    /// Its sessions with their part, oldest first.
    pub members: Vec<(RunMember, SessionMeta)>,
    /// How it stands.
    pub state: RunState,
    /// How the agents started.
    pub start: RunStart,
    /// Measured requests counted once each (the newest session's sample of
    /// each segment request).
    pub counted: u64,
    /// The rows that count (warm-ups included), per session id.
    pub rows: BTreeMap<String, Vec<SampleRow>>,
}

/// Load run `run_id`: members, state (on the store's clock, which tells a
/// silent agent), and what counts: with `with_rows`, the rows themselves
/// (for `report --run`), else only their count (`runs` reads no rows).
pub async fn load_run(store: &Store, run_id: &str, with_rows: bool) -> anyhow::Result<RunLoaded> {
    let info = store
        .run(run_id)
        .await?
        .with_context(|| format!("no run {run_id:?} in the store (see `firsttoken runs`)"))?;
    let mut members = Vec::new();
    for m in store.run_members(run_id).await? {
        let s = store.session(&m.session_id).await?.with_context(|| {
            format!(
                "run {run_id:?} names session {:?}, which is gone",
                m.session_id
            )
        })?;
        members.push((m, s));
    }
    members.sort_by(|a, b| (a.1.started_at, &a.1.id).cmp(&(b.1.started_at, &b.1.id)));
    let state = run_state(&info, &members, store.store_now_ms().await?);
    let start = run_start(&members.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>());
    // Newest session first: the first to claim an index keeps it.
    let mut claimed: BTreeSet<(u32, u64, bool)> = BTreeSet::new();
    let mut rows = BTreeMap::new();
    let mut counted = 0u64;
    let mut claim = |m: &RunMember, seq: u64, warmup: bool| {
        let fresh = m
            .index_of(seq)
            .is_some_and(|k| claimed.insert((m.segment, k, warmup)));
        counted += u64::from(fresh && !warmup);
        fresh
    };
    for (m, s) in members.iter().rev() {
        if with_rows {
            let mut kept = store.samples(&s.id).await?;
            kept.retain(|r| claim(m, r.sample.seq, r.sample.warmup));
            rows.insert(s.id.clone(), kept);
        } else {
            for (seq, warmup) in store.sample_keys(&s.id).await? {
                claim(m, seq, warmup);
            }
        }
    }
    Ok(RunLoaded {
        info,
        members,
        state,
        start,
        counted,
        rows,
    })
}

/// The run's counted rows as what `report` analyses, with the server spans
/// of its sessions that have any (joined to their counted, traced rows).
/// The rows move out of `run` into the frame.
pub async fn loaded(store: &Store, run: &mut RunLoaded, keep_rows: bool) -> anyhow::Result<Loaded> {
    let sessions: Vec<SessionMeta> = run.members.iter().map(|(_, s)| s.clone()).collect();
    if sessions.is_empty() {
        bail!("run {:?} has no sessions yet", run.info.run_id);
    }
    let rows = std::mem::take(&mut run.rows);
    crate::report::assemble(store, sessions, Some(rows), keep_rows).await
}

/// The head of a run's report: id, state, counts, agents, start.
pub fn head(run: &RunLoaded) -> Vec<String> {
    let words = firsttoken_report::words::run::state(&run.info, &run.state);
    let mut out = vec![format!(
        "run {} · {} · {} of {} planned requests stored · {} segments",
        run.info.run_id, words, run.counted, run.info.planned_requests, run.info.segments
    )];
    let mut by_segment: Vec<&(RunMember, SessionMeta)> = run.members.iter().collect();
    by_segment.sort_by_key(|(m, s)| (m.segment, s.started_at));
    for (m, s) in by_segment {
        let clock = m.clock.map_or("clock not measured".to_string(), |c| {
            format!(
                "clock {} ± {}",
                firsttoken_report::format::precise_ms(c.offset_ms),
                firsttoken_report::format::ms(c.uncertainty_ms)
            )
        });
        out.push(format!(
            "  segment {}/{} · vantage {} · network {} · host {} · session {} · {}",
            m.segment, m.segments, s.labels.vantage, s.labels.network, s.host, s.id, clock
        ));
    }
    out.extend(firsttoken_report::words::run::start(&run.start));
    out
}

/// The run as the JSON report's `run` object (docs/schema/report.v1.schema.json):
/// its row, state, counts, members with their clocks and heartbeats, how
/// the agents started, and the head's lines.
pub fn json(run: &RunLoaded) -> serde_json::Value {
    let members: Vec<serde_json::Value> = run
        .members
        .iter()
        .map(|(m, s)| {
            serde_json::json!({
                "session_id": s.id,
                "segment": m.segment,
                "segment_requests": m.segment_requests,
                "vantage": s.labels.vantage,
                "network": s.labels.network,
                "host": s.host,
                "status": s.status,
                "clock": m.clock,
                "began_at_ms": m.began_at_ms,
                "heartbeat_at_ms": m.heartbeat_at_ms,
                "heartbeat_every_ms": m.heartbeat_every_ms,
            })
        })
        .collect();
    serde_json::json!({
        "run_id": run.info.run_id,
        "created_at": run.info.created_at.to_string(),
        "segments": run.info.segments,
        "planned_requests": run.info.planned_requests,
        "counted_requests": run.counted,
        "start_at": run.info.start_at.map(|t| t.to_string()),
        "state": run.state,
        "start": run.start,
        "members": members,
        "text": head(run),
    })
}

/// List runs, newest first.
pub async fn runs(a: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open_existing(&a.store).await?;
    let list = store.runs().await?;
    if list.is_empty() {
        outln!("no runs in {}", mask_url(&a.store));
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(100);
    // What a partial run misses goes below the table, whole.
    let mut notes = Vec::new();
    t.set_header(vec![
        "run",
        "created (UTC)",
        "state",
        "agents (vantage)",
        "sessions",
        "requests",
    ]);
    for info in list {
        let run = load_run(&store, &info.run_id, false).await?;
        if matches!(run.state, RunState::Partial { .. }) {
            notes.push(format!(
                "run {}: {}",
                info.run_id,
                firsttoken_report::words::run::state(&info, &run.state)
            ));
        }
        let mut agents: Vec<String> = run
            .members
            .iter()
            .map(|(_, s)| s.labels.vantage.clone())
            .collect();
        agents.sort();
        agents.dedup();
        t.add_row(vec![
            info.run_id.clone(),
            info.created_at.to_string().chars().take(19).collect(),
            firsttoken_report::words::run::state_word(&run.state).to_string(),
            agents.join(", "),
            run.members.len().to_string(),
            format!("{} of {}", run.counted, info.planned_requests),
        ]);
    }
    outln!("{t}");
    for n in notes {
        outln!("{n}");
    }
    Ok(ExitCode::SUCCESS)
}
