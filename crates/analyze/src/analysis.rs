//! Everything at once: grouped percentiles, per-session medians and every
//! diagnostic, as one serializable [`Analysis`] for the report stage.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use firsttoken_record::session::SessionMeta;
use serde::Serialize;

use crate::Settings;
use crate::diagnose::{
    ClientClock, ColdStart, ConcurrencyWall, ConnectionCost, Drift, Limits, Overhead, Providers,
    Routes, client_clock, limits,
};
use crate::frame::{Frame, Metric, PhaseKind};
use crate::group::{GroupKey, headline_keys};
use crate::session::{PooledGroup, pooled_where};

/// A full analysis of a set of sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// How it was computed (seed, level, replicates, α, noise threshold).
    pub settings: Settings,
    /// Rows analysed (warm-ups and failures included; statistics leave them out).
    pub rows: usize,
    /// Grouping keys used: those asked for, then phase, concurrency level
    /// and strategy when not asked for (phases, levels and strategies never
    /// pool), provenance last ([`headline_keys`]).
    pub keys: Vec<GroupKey>,
    /// TTFT per group (pooled across its sessions, percentiles with CIs),
    /// with each session's median, under the one pooling rule
    /// ([`crate::group`]). Pings have no TTFT and are left out here; their
    /// RTT is the baseline in `overhead` and `drift`.
    pub groups: Vec<PooledGroup>,
    /// The first output (text or a tool call, whichever came first) of the
    /// turns that called a tool, per group as `groups` is keyed; empty
    /// (and left out of the JSON) when no turn called a tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_output: Vec<PooledGroup>,
    /// Flow paths: the wait before the first token from the flow's start,
    /// split by step ([`crate::flows`]); empty (and left out of the JSON)
    /// when no sample is a flow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<crate::flows::FlowShares>,
    /// Conversation paths: TTFT by turn, and how a later turn compares
    /// with the first ([`crate::conversations`]); empty (and left out of
    /// the JSON) when no sample is a turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conversations: Vec<crate::conversations::Conversations>,
    /// App overhead per provenance kind.
    pub overhead: Vec<Overhead>,
    /// Connection cost per provenance kind.
    pub connection: Vec<ConnectionCost>,
    /// Concurrency wall per provenance kind.
    pub concurrency: Vec<ConcurrencyWall>,
    /// Cold probes per provenance kind.
    pub cold: Vec<ColdStart>,
    /// Strategies and providers per provenance kind.
    pub providers: Vec<Providers>,
    /// Paths and routes per provenance kind.
    pub routes: Vec<Routes>,
    /// Day-to-day drift per provenance kind.
    pub drift: Vec<Drift>,
    /// The measuring client's clock per session: kernel or user stamps,
    /// client lag and its verdict, shared first-token reads.
    pub clock: ClientClock,
    /// What the data cannot support.
    pub limits: Limits,
    /// The engine's own prefill joined per request, and warm requests on
    /// new connections ([`crate::engine`]); empty (and left out of the
    /// JSON) when no stream carried engine timing and every warm request
    /// reused its connection.
    #[serde(skip_serializing_if = "crate::engine::EngineTimes::is_empty")]
    pub engine: crate::engine::EngineTimes,
    /// The engine's own metrics differenced over each session that read
    /// them before and after its requests ([`crate::engine_metrics`]);
    /// empty (and left out of the JSON) until
    /// [`crate::engine_metrics::engine_metrics`] is given scrapes.
    #[serde(skip_serializing_if = "crate::engine_metrics::EngineMetrics::is_empty")]
    pub engine_metrics: crate::engine_metrics::EngineMetrics,
    /// Render lag of browser-measured messages (`firsttoken browse
    /// --store`) per code version, phase and path ([`crate::render`]);
    /// empty (and left out of the JSON) until
    /// [`crate::render::render_groups`] is given such rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub render: Vec<crate::render::RenderGroup>,
    /// The app's server-side spans joined to the samples; `None` until
    /// [`crate::traces::attach_traces`] is given spans or trace ids.
    pub traces: Option<crate::traces::Traces>,
}

/// Analyse a frame: TTFT grouped by `keys` (pooled, with per-session
/// medians) and every diagnostic. Each computation is a pure function of
/// the frame and fills one field of the result, so they run as tasks on
/// the machine's cores ([`run_tasks`]), the heaviest first; the result is
/// the same as one thread's.
pub fn analyze(
    frame: &Frame,
    sessions: &[SessionMeta],
    keys: &[GroupKey],
    settings: &Settings,
) -> Analysis {
    // Diagnostics describe one setup: sessions of different code versions
    // are never pooled into one overhead, wall or cold-start figure.
    let versions = code_versions(frame);
    let scopes: Vec<(Cow<'_, Frame>, String)> = if versions.len() <= 1 {
        vec![(Cow::Borrowed(frame), String::new())]
    } else {
        versions
            .iter()
            .map(|v| {
                (
                    Cow::Owned(scoped_to_code_version(frame, v)),
                    format!("code_version={v}"),
                )
            })
            .collect()
    };
    // A diagnostic over each scope's frame, each item labelled with its
    // scope when there are several.
    macro_rules! scoped {
        ($f:path) => {{
            let mut out = Vec::new();
            for (f, scope) in &scopes {
                for mut d in $f(f, settings) {
                    if !scope.is_empty() {
                        d.scope = scope.clone();
                    }
                    out.push(d);
                }
            }
            out
        }};
    }
    let keys = headline_keys(keys);
    let (overhead, connection, concurrency, cold) = (
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    );
    let (providers, routes, drift) = (OnceLock::new(), OnceLock::new(), OnceLock::new());
    let (groups, first_output, flows, conversations, engine, clock_limits) = (
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    );
    // The heaviest first (as measured at a million rows: overhead ~0.47 s,
    // connection cost, routes, providers, groups and the limits ~0.17 s
    // each, cold starts and drift ~0.1 s, the rest less), so the last task
    // to start is a short one.
    let tasks: [&(dyn Fn() + Sync); 13] = [
        &|| drop(overhead.set(scoped!(crate::diagnose::overhead))),
        &|| drop(connection.set(scoped!(crate::diagnose::connection_cost))),
        &|| drop(routes.set(scoped!(crate::diagnose::routes))),
        &|| drop(providers.set(scoped!(crate::diagnose::providers))),
        // A conversation's turns are not pooled here: each turn is a row
        // of its own in `conversations`.
        &|| {
            drop(
                groups.set(pooled_where(frame, &keys, Metric::Ttft, settings, |o| {
                    !matches!(o.phase, PhaseKind::Ping | PhaseKind::Conversation)
                })),
            )
        },
        &|| {
            let clock = client_clock(frame, sessions, settings);
            let mut limits = limits(frame, sessions);
            limits.add_overloaded(&clock);
            drop(clock_limits.set((clock, limits)));
        },
        &|| drop(cold.set(scoped!(crate::diagnose::cold_start))),
        &|| drop(drift.set(scoped!(crate::diagnose::drift))),
        &|| drop(concurrency.set(scoped!(crate::diagnose::concurrency_wall))),
        &|| drop(engine.set(crate::engine::engine_times(frame, settings))),
        // Only the turns that called a tool: for the others the first
        // output is the first token, already in `groups`.
        &|| {
            drop(first_output.set(pooled_where(
                frame,
                &keys,
                Metric::FirstOutput,
                settings,
                |o| {
                    !matches!(o.phase, PhaseKind::Ping | PhaseKind::Conversation)
                        && !o.ttftc.is_nan()
                },
            )))
        },
        &|| drop(flows.set(crate::flows::flow_shares(frame, settings))),
        &|| drop(conversations.set(crate::conversations::by_turn(frame, settings))),
    ];
    run_tasks(&tasks);
    let done = "run_tasks ran every task";
    let (clock, limits) = clock_limits.into_inner().expect(done);
    Analysis {
        settings: *settings,
        rows: frame.len(),
        keys,
        groups: groups.into_inner().expect(done),
        first_output: first_output.into_inner().expect(done),
        flows: flows.into_inner().expect(done),
        conversations: conversations.into_inner().expect(done),
        engine: engine.into_inner().expect(done),
        engine_metrics: Default::default(),
        render: Vec::new(),
        overhead: overhead.into_inner().expect(done),
        connection: connection.into_inner().expect(done),
        concurrency: concurrency.into_inner().expect(done),
        cold: cold.into_inner().expect(done),
        providers: providers.into_inner().expect(done),
        routes: routes.into_inner().expect(done),
        drift: drift.into_inner().expect(done),
        clock,
        limits,
        traces: None,
    }
}

/// Runs every task once, on as many threads as the machine has cores (at
/// most one a task), each thread taking the next task not yet started. A
/// panic in a task is this call's panic.
fn run_tasks(tasks: &[&(dyn Fn() + Sync)]) {
    let next = AtomicUsize::new(0);
    let work = || {
        while let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
            task();
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tasks.len());
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        work();
        for h in helpers {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
}

/// Distinct code versions of the frame's sessions, in first-seen order.
fn code_versions(frame: &Frame) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &frame.sessions {
        if let Some(v) = s.labels.and_then(|l| frame.strings.get(l[1] as usize))
            && !out.contains(v)
        {
            out.push(v.clone());
        }
    }
    out
}

/// The same rows restricted to the sessions of `code_version`: row numbers
/// are kept and only the (provenance, phase) index lists are filtered, which
/// is all the diagnostics read.
fn scoped_to_code_version(frame: &Frame, code_version: &str) -> Frame {
    let keep: Vec<bool> = frame
        .sessions
        .iter()
        .map(|s| {
            s.labels.is_some_and(|l| {
                frame
                    .strings
                    .get(l[1] as usize)
                    .is_some_and(|v| v == code_version)
            })
        })
        .collect();
    let mut f = frame.clone();
    for list in &mut f.index {
        list.retain(|&i| {
            keep.get(frame.obs[i as usize].session as usize)
                .copied()
                .unwrap_or(false)
        });
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::WallVerdict;
    use crate::testutil::{meta, row, spread};
    use firsttoken_record::session::{Provenance, SampleRow};
    use firsttoken_record::vocab::Destination;

    fn analyze_rows(
        rows: &[SampleRow],
        sessions: &[SessionMeta],
        keys: &[GroupKey],
        settings: &Settings,
    ) -> Option<Analysis> {
        let frame = Frame::from_rows(rows, sessions).ok()?;
        Some(analyze(&frame, sessions, keys, settings))
    }

    /// The article's session shape: 10 ping, 3 cold, 120 warm, 40 fresh,
    /// 90 direct over 3 strategies, 60 concurrent (c = 1, 3, 5 × 20).
    fn article() -> (Vec<SampleRow>, Vec<SessionMeta>) {
        let mut rows = Vec::new();
        for t in spread(40.0, 4.0, 10) {
            let mut r = row("s", "ping", Some("ping"), None);
            r.sample.ttfb_ms = Some(t);
            rows.push(r);
        }
        for t in [9000.0, 8000.0, 7000.0] {
            rows.push(row("s", "cold", Some("chat"), Some(t)));
        }
        for (i, t) in spread(2400.0, 300.0, 120).into_iter().enumerate() {
            let path = if i % 2 == 0 { "chat" } else { "docs" };
            rows.push(row(
                "s",
                "warm",
                Some(path),
                Some(t + if i % 2 == 1 { 600.0 } else { 0.0 }),
            ));
        }
        for t in spread(2600.0, 300.0, 40) {
            let mut r = row("s", "fresh", Some("chat"), Some(t));
            r.sample.dns_ms = Some(20.0);
            r.sample.connect_ms = Some(60.0);
            r.sample.tls_ms = Some(150.0);
            rows.push(r);
        }
        for (i, t) in spread(500.0, 80.0, 90).into_iter().enumerate() {
            let mut r = row("s", "direct", Some("direct"), Some(t));
            r.dest = Destination::Direct {
                strategy: Some(["latency", "throughput", "default"][i % 3].into()),
            };
            r.sample.tokens_per_s = Some(50.0 + (i % 3) as f64 * 20.0);
            rows.push(r);
        }
        for (i, t) in spread(2400.0, 200.0, 60).into_iter().enumerate() {
            let k = [1u32, 3, 5][i / 20];
            let mut r = row(
                "s",
                "concurrency",
                Some("chat"),
                Some(t * (1.0 + (i % k as usize) as f64)),
            );
            r.concurrency = Some(k);
            rows.push(r);
        }
        (rows, vec![meta("s", Provenance::Measured)])
    }

    #[test]
    fn a_whole_session_analyses_reproducibly() {
        let (rows, sessions) = article();
        assert_eq!(rows.len(), 323);
        let settings = crate::settings_for(&sessions);
        assert_eq!(settings.seed(), 7);
        let keys = [GroupKey::Phase, GroupKey::Path];
        let a = analyze_rows(&rows, &sessions, &keys, &settings).unwrap();
        let b = analyze_rows(&rows, &sessions, &keys, &settings).unwrap();
        assert_eq!(a, b, "same seed, same analysis");
        let other = analyze_rows(&rows, &sessions, &keys, &Settings::new(8)).unwrap();
        assert_ne!(
            a.overhead[0].overhead_median, other.overhead[0].overhead_median,
            "differences are bootstrapped from the seed"
        );
        assert_eq!(
            a.keys,
            vec![
                GroupKey::Phase,
                GroupKey::Path,
                GroupKey::Concurrency,
                GroupKey::Strategy,
                GroupKey::Provenance
            ]
        );
        assert_eq!(a.rows, 323);
        assert_eq!(a.overhead.len(), 3, "chat, docs and the pooled summary");
        assert_eq!(a.drift.len(), 3, "warm requests on chat and docs");
        for d in [
            &a.connection.len(),
            &a.concurrency.len(),
            &a.cold.len(),
            &a.providers.len(),
            &a.routes.len(),
        ] {
            assert_eq!(*d, 1);
        }
        assert_eq!(a.cold[0].probes.len(), 3);
        assert_eq!(a.providers[0].strategies.len(), 3);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["settings"]["replicates"], 2000);
        assert_eq!(
            json["groups"][0]["label"]["phase"], "warm",
            "the headline phase first; pings are not TTFT groups"
        );
        assert_eq!(json["groups"][0]["pooled"]["metric"], "ttft");
        assert_eq!(
            json["overhead"][0]["overhead_median"]["estimate"]["status"],
            "ok"
        );
        assert!(json["limits"]["items"].as_array().unwrap().len() >= 3);
    }

    #[test]
    fn diagnostics_never_pool_two_code_versions() {
        let mut sessions = Vec::new();
        let mut rows = Vec::new();
        // v1 queues (TTFT grows with k like a one-at-a-time server); v2 does not.
        for (id, slow) in [("v1", true), ("v2", false)] {
            let mut m = meta(id, Provenance::Synthetic);
            m.labels.code_version = id.into();
            sessions.push(m);
            for k in [1u32, 3, 5] {
                let factor = if slow { f64::from(k + 1) / 2.0 } else { 1.0 };
                for t in spread(1000.0 * factor, 40.0, 30) {
                    let mut r = row(id, "concurrency", Some("chat"), Some(t));
                    r.provenance = Provenance::Synthetic;
                    r.concurrency = Some(k);
                    rows.push(r);
                }
            }
        }
        let a = analyze_rows(&rows, &sessions, &[], &Settings::new(3)).unwrap();
        assert_eq!(a.concurrency.len(), 2, "one wall per code version");
        let v1 = a
            .concurrency
            .iter()
            .find(|w| w.scope == "code_version=v1")
            .unwrap();
        let v2 = a
            .concurrency
            .iter()
            .find(|w| w.scope == "code_version=v2")
            .unwrap();
        assert_eq!(v1.verdict, WallVerdict::OneAtATime);
        assert_eq!(v2.verdict, WallVerdict::Scales);
    }
}
