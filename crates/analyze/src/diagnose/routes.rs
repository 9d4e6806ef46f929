//! Paths and routes: how each app path performs, and whether requests took
//! the route they were meant to.
//!
//! TTFT per path uses the warm phase (reused connections, sequential), so
//! paths compare like for like; every other path is compared with the
//! fastest ([`mod@crate::compare`]). The funnel uses every app request (cold,
//! warm, fresh, concurrency, rate; warm-ups excluded): sent to a path, the
//! route the app reported (`X-Route`), and how many reached the intended
//! route (the path's `expect_route` in the session's stored config, else
//! its name): "of 20 requests sent to docs, 2 reached it". Where samples
//! name their prompt (index and hash), the funnel counts questions too and
//! lists which went astray, per route they took. A path is flagged when
//! some of its reported routes differ from the intended one. Per reported
//! route, warm TTFT shows what each route really costs.

use std::collections::HashMap;

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::providers::Share;
use super::{provenances_with, rows_of};
use crate::Settings;
use crate::compare::{Comparison, compare};
use crate::frame::{Frame, FxBuild, Metric, NONE, PhaseKind, partition};
use crate::samples::{Counts, MetricSummary, Samples, gather};

const APP_PHASES: [PhaseKind; 5] = [
    PhaseKind::Cold,
    PhaseKind::Warm,
    PhaseKind::Fresh,
    PhaseKind::Concurrency,
    PhaseKind::Rate,
];

/// Intended path against reported route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Funnel {
    /// Requests sent to the path (warm-ups excluded).
    pub sent: usize,
    /// Of which failed.
    pub failed: usize,
    /// Of which reported a route.
    pub reported: usize,
    /// Of which reported the intended route.
    pub reached: usize,
    /// Reported routes (`unreported` when none), most first.
    pub routes: Vec<Share>,
    /// The route the path's requests should report: its `expect_route`,
    /// else its name.
    pub expected: String,
    /// Distinct prompts sent (requests that name their prompt).
    pub questions: usize,
    /// Of which at least one request reached the intended route.
    pub questions_reached: usize,
    /// Per other route taken (`unreported` when none), the prompts that
    /// took it; routes by most prompts first.
    pub astray: Vec<Astray>,
}

/// Prompts that took a route other than the intended one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Astray {
    /// The route they took (`unreported` when none).
    pub route: String,
    /// The prompts, by index.
    pub prompts: Vec<PromptId>,
}

/// A prompt by its identity (never its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptId {
    /// Index in its list.
    pub index: u32,
    /// First 12 hex digits of the SHA-256 of its text.
    pub hash: String,
    /// Requests with it that took this route.
    pub requests: usize,
}

/// One app path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathStats {
    /// Path name.
    pub path: String,
    /// Warm TTFT.
    pub ttft: MetricSummary,
    /// Its funnel.
    pub funnel: Funnel,
    /// Whether it streams or buffers its answers.
    pub buffering: Buffering,
}

/// Buffered answers: the whole answer arrived in one piece at the end of
/// the stream (one content chunk, or the last content token within
/// [`BUFFERED_SPREAD_MS`] of the first), so the first token is the last and
/// TTFT is the full answer time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Buffering {
    /// Successful counted requests with content.
    pub requests: usize,
    /// Of which arrived in one piece.
    pub buffered: usize,
}

/// Content chunks closer together than this arrived in one piece.
pub const BUFFERED_SPREAD_MS: f64 = 1.0;

impl Buffering {
    /// The path buffers: at least 5 requests with content, 90 % or more of
    /// them in one piece.
    pub fn likely(&self) -> bool {
        self.requests >= 5 && self.buffered * 10 >= self.requests * 9
    }
}

fn buffering(frame: &Frame, rows: &[u32]) -> Buffering {
    let mut b = Buffering {
        requests: 0,
        buffered: 0,
    };
    for &i in rows {
        let o = frame.obs(i);
        if !o.timed() || o.ttft.is_nan() {
            continue;
        }
        b.requests += 1;
        let spread = o.last_token - o.ttft;
        // 0 chunks with a first token: rows stored without a chunk count;
        // only the spread can tell.
        let one_piece = o.content_chunks == 1 || (!spread.is_nan() && spread <= BUFFERED_SPREAD_MS);
        b.buffered += usize::from(one_piece);
    }
    b
}

/// Warm TTFT of requests by the route the app reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteStats {
    /// Reported route.
    pub route: String,
    /// Warm TTFT of the requests that took it.
    pub ttft: MetricSummary,
}

/// Paths and routes for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Routes {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// Per app path, by name.
    pub paths: Vec<PathStats>,
    /// Per reported route, by name.
    pub routes: Vec<RouteStats>,
    /// Path with the lowest warm median TTFT.
    pub fastest_path: Option<String>,
    /// Every other path against the fastest.
    pub comparisons: Vec<Comparison>,
}

/// Paths and routes per provenance kind with app requests.
pub fn routes(frame: &Frame, settings: &Settings) -> Vec<Routes> {
    provenances_with(frame, &APP_PHASES)
        .into_iter()
        .map(|p| one(frame, p, settings))
        .collect()
}

/// Row indices grouped by an interned id, groups in name order, rows with
/// no value left out.
fn by_id(frame: &Frame, rows: &[u32], id: impl Fn(u32) -> u32) -> Vec<(u32, Vec<u32>)> {
    let mut parts = partition(rows, |i| u64::from(id(i)));
    parts.retain(|(k, _)| *k != u64::from(NONE));
    parts.sort_by(|a, b| frame.str(a.0 as u32).cmp(&frame.str(b.0 as u32)));
    parts.into_iter().map(|(k, r)| (k as u32, r)).collect()
}

fn one(frame: &Frame, prov: Provenance, settings: &Settings) -> Routes {
    let app = rows_of(frame, prov, &APP_PHASES);
    let warm = rows_of(frame, prov, &[PhaseKind::Warm]);
    let path = |i: u32| frame.obs(i).path;
    let route = |i: u32| frame.obs(i).route;
    let warm_by_path: Vec<(u32, Samples, Counts)> = by_id(frame, &warm, path)
        .into_iter()
        .map(|(p, r)| {
            let (s, c) = gather(frame, &r, Metric::Ttft);
            (p, s, c)
        })
        .collect();
    let empty = (NONE, Samples::default(), Counts::default());
    let warm_of = |pid: u32| {
        warm_by_path
            .iter()
            .find(|(p, _, _)| *p == pid)
            .unwrap_or(&empty)
    };
    let app_by_path = by_id(frame, &app, path);
    let paths: Vec<PathStats> = app_by_path
        .iter()
        .map(|(pid, rows)| {
            let name = frame.str(*pid).unwrap_or("-").to_string();
            let (_, s, c) = warm_of(*pid);
            PathStats {
                ttft: MetricSummary::new(Metric::Ttft, s, *c, settings),
                funnel: funnel(frame, &name, *pid, rows),
                buffering: buffering(frame, rows),
                path: name,
            }
        })
        .collect();
    let routes = by_id(frame, &warm, route)
        .into_iter()
        .map(|(rid, rows)| RouteStats {
            route: frame.str(rid).unwrap_or("-").to_string(),
            ttft: MetricSummary::of_rows(frame, &rows, Metric::Ttft, settings),
        })
        .collect();
    let fastest = paths
        .iter()
        .zip(&app_by_path)
        .filter_map(|(p, (pid, _))| p.ttft.p50.point().map(|m| (p, *pid, m)))
        .min_by(|a, b| a.2.total_cmp(&b.2));
    let comparisons: Vec<Comparison> = match fastest {
        None => Vec::new(),
        Some((f, fid, _)) => {
            let base = &warm_of(fid).1;
            paths
                .iter()
                .zip(&app_by_path)
                .filter(|(p, (pid, _))| *pid != fid && p.ttft.n > 0)
                .map(|(p, (pid, _))| {
                    compare(
                        &warm_of(*pid).1,
                        base,
                        (&p.path, &f.path),
                        Metric::Ttft,
                        settings,
                    )
                })
                .collect()
        }
    };
    Routes {
        provenance: prov,
        scope: String::new(),
        fastest_path: fastest.map(|(p, _, _)| p.path.clone()),
        paths,
        routes,
        comparisons,
    }
}

fn funnel(frame: &Frame, name: &str, pid: u32, rows: &[u32]) -> Funnel {
    let (mut sent, mut failed, mut reported, mut reached) = (0usize, 0usize, 0usize, 0usize);
    let mut counts: HashMap<u32, usize, FxBuild> = HashMap::default();
    let mut expected: Option<u32> = None;
    // (prompt hash, index) → reached at least once; per astray route, the
    // prompts and their request counts.
    let mut questions: HashMap<(u32, u32), bool, FxBuild> = HashMap::default();
    let mut astray: HashMap<u32, HashMap<(u32, u32), usize, FxBuild>, FxBuild> = HashMap::default();
    for &i in rows {
        let o = frame.obs(i);
        if !o.counted() {
            continue;
        }
        sent += 1;
        failed += usize::from(o.error.is_some());
        *counts.entry(o.route).or_default() += 1;
        let want = frame.expected_route(o);
        expected.get_or_insert(want);
        let hit = o.route != NONE
            && (o.route == want || (want == pid && frame.str(o.route) == Some(name)));
        if o.route != NONE {
            reported += 1;
            reached += usize::from(hit);
        }
        // A failed request took no route: it is no question gone astray.
        if o.prompt != NONE && (o.error.is_none() || hit) {
            let q = (o.prompt, o.prompt_index);
            *questions.entry(q).or_default() |= hit;
            if !hit {
                *astray.entry(o.route).or_default().entry(q).or_default() += 1;
            }
        }
    }
    let questions_reached = questions.values().filter(|&&r| r).count();
    let mut astray: Vec<Astray> = astray
        .into_iter()
        .map(|(r, prompts)| {
            let mut prompts: Vec<PromptId> = prompts
                .into_iter()
                .map(|((h, index), requests)| PromptId {
                    index,
                    hash: frame.str(h).unwrap_or("-").to_string(),
                    requests,
                })
                .collect();
            prompts.sort_by(|a, b| a.index.cmp(&b.index).then_with(|| a.hash.cmp(&b.hash)));
            Astray {
                route: route_name(frame, r).to_string(),
                prompts,
            }
        })
        .collect();
    astray.sort_by(|a, b| {
        b.prompts
            .len()
            .cmp(&a.prompts.len())
            .then_with(|| a.route.cmp(&b.route))
    });
    let mut routes: Vec<Share> = counts
        .into_iter()
        .map(|(r, count)| Share {
            name: route_name(frame, r).to_string(),
            count,
        })
        .collect();
    routes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    Funnel {
        sent,
        failed,
        reported,
        reached,
        routes,
        expected: expected
            .and_then(|e| frame.str(e))
            .unwrap_or(name)
            .to_string(),
        questions: questions.len(),
        questions_reached,
        astray,
    }
}

/// A reported route's name; `unreported` for none.
fn route_name(frame: &Frame, r: u32) -> &str {
    if r == NONE {
        "unreported"
    } else {
        frame.str(r).unwrap_or("-")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{failed, frame, meta, row, spread};
    use firsttoken_record::session::PromptRef;

    /// Issue 10: the router is meant to send document questions to docs
    /// (`expect_route = "docs"`); the funnel counts against that, names the
    /// questions that went astray, and keeps the fast and slow paths apart.
    #[test]
    fn funnel_against_expect_route_names_the_questions_gone_astray() {
        let mut m = meta("s", Provenance::Measured);
        m.spec = serde_json::json!({"config": {"app": {"paths": [
            {"name": "chat"}, {"name": "docs"}, {"name": "router", "expect_route": "docs"}
        ]}}});
        let mut rows = Vec::new();
        for (path, center) in [("chat", 2000.0), ("docs", 100.0)] {
            for t in spread(center, center / 20.0, 30) {
                let mut r = row("s", "warm", Some(path), Some(t));
                r.sample.route = Some(path.into());
                rows.push(r);
            }
        }
        // 20 document questions to the router: #4 and #9 reach docs.
        for i in 0..20u32 {
            let reached = i == 4 || i == 9;
            let mut r = row(
                "s",
                "warm",
                Some("router"),
                Some(if reached { 100.0 } else { 2000.0 }),
            );
            r.sample.route = Some(if reached { "docs" } else { "chat" }.into());
            r.prompt = Some(PromptRef {
                index: i,
                hash: format!("{i:012x}"),
            });
            rows.push(r);
        }
        let f = Frame::from_rows(&rows, &[m]).unwrap();
        let r = &routes(&f, &Settings::new(8))[0];
        let router = r.paths.iter().find(|p| p.path == "router").unwrap();
        let fu = &router.funnel;
        assert_eq!(fu.expected, "docs");
        assert_eq!((fu.sent, fu.reached), (20, 2));
        assert_eq!((fu.questions, fu.questions_reached), (20, 2));
        assert_eq!(fu.astray.len(), 1);
        assert_eq!(fu.astray[0].route, "chat");
        let idx: Vec<u32> = fu.astray[0].prompts.iter().map(|p| p.index).collect();
        let want: Vec<u32> = (0..20).filter(|i| *i != 4 && *i != 9).collect();
        assert_eq!(idx, want);
        assert_eq!(fu.astray[0].prompts[0].hash, "000000000000");
        // chat and docs reach themselves; their warm TTFT is their own.
        let docs = r.paths.iter().find(|p| p.path == "docs").unwrap();
        assert_eq!(
            (docs.funnel.expected.as_str(), docs.funnel.reached),
            ("docs", 30)
        );
        assert!((docs.ttft.p50.point().unwrap() - 100.0).abs() < 10.0);
        assert_eq!(docs.ttft.n, 30);
        assert_eq!(r.fastest_path.as_deref(), Some("docs"));
    }

    /// Issue 10 (also seen): a buffering path (TTFT equal to the total
    /// time, one chunk) is named; a streaming one is not.
    #[test]
    fn a_path_that_buffers_is_named() {
        let mut rows = Vec::new();
        for t in spread(900.0, 50.0, 20) {
            let mut r = row("s", "warm", Some("chat"), Some(t));
            r.sample.content_chunks = 12;
            r.sample.last_token_ms = Some(t + 400.0);
            rows.push(r);
            let mut r = row("s", "warm", Some("docs"), Some(t + 400.0));
            r.sample.content_chunks = 1;
            r.sample.last_token_ms = Some(t + 400.0);
            rows.push(r);
        }
        let r = &routes(&frame(&rows), &Settings::new(8))[0];
        let (chat, docs) = (&r.paths[0], &r.paths[1]);
        assert_eq!(
            docs.buffering,
            Buffering {
                requests: 20,
                buffered: 20
            }
        );
        assert!(docs.buffering.likely());
        assert_eq!(chat.buffering.buffered, 0);
        assert!(!chat.buffering.likely());
    }

    #[test]
    fn funnel_counts_and_path_comparison() {
        let mut rows = Vec::new();
        for t in spread(900.0, 50.0, 40) {
            let mut r = row("s", "warm", Some("chat"), Some(t));
            r.sample.route = Some("chat".into());
            rows.push(r);
        }
        // 20 sent to docs: 2 reached docs, 16 went to chat, 2 unreported.
        for (i, t) in spread(3000.0, 200.0, 20).into_iter().enumerate() {
            let mut r = row("s", "warm", Some("docs"), Some(t));
            r.sample.route = match i {
                0 | 1 => Some("docs".into()),
                2 | 3 => None,
                _ => Some("chat".into()),
            };
            rows.push(r);
        }
        // Warm-ups and direct rows stay out of the funnel.
        let mut w = row("s", "warm", Some("docs"), Some(1.0));
        w.sample.warmup = true;
        rows.push(w);
        rows.push(row("s", "direct", Some("direct"), Some(400.0)));
        rows.push(failed(row("s", "cold", Some("chat"), None)));

        let r = &routes(&frame(&rows), &Settings::new(8))[0];
        assert_eq!(r.paths.len(), 2);
        let docs = &r.paths[1];
        assert_eq!(docs.path, "docs");
        assert_eq!(
            (docs.funnel.sent, docs.funnel.reported, docs.funnel.reached),
            (20, 18, 2)
        );
        let chat = &r.paths[0];
        assert_eq!(
            (chat.funnel.sent, chat.funnel.failed, chat.funnel.reached),
            (41, 1, 40)
        );
        assert_eq!(r.fastest_path.as_deref(), Some("chat"));
        assert_eq!(r.comparisons.len(), 1);
        assert_eq!(r.comparisons[0].direction, Direction::Increase);
        assert_eq!(r.routes.len(), 2);
        assert_eq!(r.routes[0].ttft.n, 56);
        assert_eq!(
            docs.funnel.routes,
            vec![
                Share {
                    name: "chat".into(),
                    count: 16
                },
                Share {
                    name: "docs".into(),
                    count: 2
                },
                Share {
                    name: "unreported".into(),
                    count: 2
                }
            ]
        );
    }
}
