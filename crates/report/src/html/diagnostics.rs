//! Each diagnostic as the page shows it: its sentence ([`crate::words`]),
//! its numbers as named facts, and its tables, every number from
//! [`crate::format`].

use firsttoken_analyze::diagnose::{
    ColdStart, ConcurrencyWall, ConnectionCost, Drift, Overhead, ProviderStats, Providers, Routes,
    Share,
};
use firsttoken_analyze::{Analysis, MetricSummary};

use super::plots::Plot;
use super::view::{Entry, Section, Table, fact};
use crate::format::{
    Cell, DASH, Unit, cell, ms, opt, percent, point, ratio, relative, signed_stat, stat,
};
use crate::words::{self, Entry as _};

/// A summary as a table row: name, requests, error rate, n, p50, p95.
fn summary_row(name: &str, m: &MetricSummary) -> Vec<Cell> {
    let u = Unit::of(m.metric);
    vec![
        Cell::plain(name.to_string()),
        Cell::plain(m.requests.to_string()),
        Cell::plain(percent(m.error_rate)),
        Cell::plain(m.n.to_string()),
        cell(u, &m.p50, false),
        cell(u, &m.p95, false),
    ]
}

const SUMMARY_HEAD: [&str; 6] = [
    "",
    "requests",
    "errors",
    "n",
    "p50 [95 % CI]",
    "p95 [95 % CI]",
];

fn mix(shares: &[Share]) -> String {
    shares
        .iter()
        .map(|s| format!("{} {}", s.name, s.count))
        .collect::<Vec<_>>()
        .join(", ")
}

fn overhead(a: &Analysis, o: &Overhead) -> Entry {
    let mut t = Table::new("TTFT in the sessions that have both", &SUMMARY_HEAD, &[]);
    t.rows.push(summary_row("app (warm)", &o.app));
    t.rows.push(summary_row("direct to provider", &o.direct));
    if let Some(p) = &o.ping {
        t.rows.push(summary_row("ping RTT", p));
    }
    let mut tables = vec![t];
    let mut facts = vec![
        fact(
            "sessions with app and direct requests",
            o.sessions.to_string(),
        ),
        fact(
            "overhead (median)",
            signed_stat(Unit::Ms, &o.overhead_median.estimate),
        ),
        fact("overhead (p95)", signed_stat(Unit::Ms, &o.overhead_p95)),
        fact("relative to direct median", relative(o.relative_overhead)),
    ];
    if let Some(st) = &o.server_timing {
        facts.push(fact(
            "requests with Server-Timing",
            format!("{} of {}", st.requests_with_timing, st.requests),
        ));
        facts.push(fact("explained by app phases", ms(st.explained_ms)));
        facts.push(fact("unexplained", opt(Unit::Ms, st.unexplained_ms)));
        let mut t = Table::new(
            "The app's own phases (Server-Timing)",
            &["phase", "counted as", "n", "median [95 % CI]"],
            &[1],
        );
        for (kind, parts) in [
            ("app overhead", &st.parts),
            ("model or total", &st.model_parts),
        ] {
            for p in parts {
                t.rows.push(vec![
                    Cell::plain(p.name.clone()),
                    Cell::plain(kind.to_string()),
                    Cell::plain(p.n.to_string()),
                    cell(Unit::Ms, &p.median, false),
                ]);
            }
        }
        tables.push(t);
    }
    Entry {
        provenance: o.provenance.as_str(),
        summary: words::scoped(
            &o.label(),
            words::overhead_with(o, crate::doc_traces::split_for(a, o)),
        ),
        facts,
        tables,
    }
}

fn connection(cc: &ConnectionCost) -> Entry {
    let mut t = Table::new("TTFT by connection", &SUMMARY_HEAD, &[]);
    t.rows.push(summary_row("fresh connection", &cc.fresh));
    t.rows
        .push(summary_row("reused connection (warm)", &cc.warm));
    Entry {
        provenance: cc.provenance.as_str(),
        summary: words::scoped(&cc.label(), words::connection(cc)),
        facts: vec![
            fact(
                "sessions with fresh and warm requests",
                cc.sessions.to_string(),
            ),
            fact(
                "cost (median)",
                signed_stat(Unit::Ms, &cc.cost_median.estimate),
            ),
            fact("cost (p95)", signed_stat(Unit::Ms, &cc.cost_p95)),
            fact("DNS lookup (median)", stat(Unit::Ms, &cc.dns)),
            fact("TCP connect (median)", stat(Unit::Ms, &cc.connect)),
            fact("TLS handshake (median)", stat(Unit::Ms, &cc.tls)),
            fact("other (cost − DNS − TCP − TLS)", opt(Unit::Ms, cc.other_ms)),
        ]
        .into_iter()
        .chain(cc.tls_by_handshake.iter().map(|h| {
            fact(
                &format!(
                    "TLS handshake, {} (median, n={})",
                    h.handshake.as_str(),
                    h.n
                ),
                stat(Unit::Ms, &h.tls),
            )
        }))
        .collect(),
        tables: vec![t],
    }
}

fn concurrency(w: &ConcurrencyWall) -> Entry {
    let mut t = Table::new(
        "TTFT per concurrency level",
        &[
            "k",
            "requests",
            "errors",
            "n",
            "median TTFT [95 % CI]",
            "ratio to baseline [95 % CI]",
            "serial model",
            "ideal",
        ],
        &[],
    );
    for l in &w.levels {
        t.rows.push(vec![
            Cell::plain(l.concurrency.to_string()),
            Cell::plain(l.ttft.requests.to_string()),
            Cell::plain(percent(l.ttft.error_rate)),
            Cell::plain(l.ttft.n.to_string()),
            cell(Unit::Ms, &l.ttft.p50, false),
            cell(Unit::Ratio, &l.ratio.estimate, false),
            Cell::plain(ratio(l.serial_model)),
            Cell::plain(ratio(l.ideal)),
        ]);
    }
    Entry {
        provenance: w.provenance.as_str(),
        summary: words::scoped(&w.label(), words::concurrency(w)),
        facts: vec![
            fact("baseline", w.baseline.to_string()),
            fact("baseline median", stat(Unit::Ms, &w.baseline_median)),
            fact(
                "effective parallelism",
                w.effective_parallelism
                    .map_or_else(|| "unbounded or unknown".to_string(), |p| format!("{p:.1}")),
            ),
            fact("verdict", words::wall_verdict(w.verdict).to_string()),
        ],
        tables: vec![t],
    }
}

fn cold(cs: &ColdStart) -> Entry {
    let mut t = Table::new(
        "Cold probes",
        &[
            "session",
            "#",
            "started (UTC)",
            "path",
            "TTFT",
            "excess over warm median [95 % CI]",
            "× warm median",
            "beyond warm p95",
            "error",
        ],
        &[2, 3, 7, 8],
    );
    for p in &cs.probes {
        t.rows.push(vec![
            Cell::plain(p.session_id.clone()),
            Cell::plain(p.seq.to_string()),
            Cell::plain(p.started_at.clone()),
            Cell::plain(p.path.clone().unwrap_or_else(|| DASH.into())),
            Cell::plain(opt(Unit::Ms, p.ttft_ms)),
            p.excess
                .map_or_else(|| Cell::plain(DASH), |f| cell(Unit::Ms, &f.estimate, true)),
            Cell::plain(opt(Unit::Ratio, p.ratio)),
            Cell::plain(match p.beyond_warm {
                Some(true) => "yes",
                Some(false) => "no",
                None => DASH,
            }),
            Cell::plain(p.error.clone().unwrap_or_else(|| DASH.into())),
        ]);
    }
    Entry {
        provenance: cs.provenance.as_str(),
        summary: words::scoped(&cs.label(), words::cold(cs)),
        facts: vec![
            fact("warm median", stat(Unit::Ms, &cs.warm_median)),
            fact("warm p95", stat(Unit::Ms, &cs.warm_p95)),
            fact(
                "median probe ÷ warm median",
                opt(Unit::Ratio, cs.median_ratio),
            ),
        ],
        tables: vec![t],
    }
}

fn provider_table(caption: &str, first: &str, list: &[ProviderStats], mix_head: &str) -> Table {
    let mut t = Table::new(
        caption,
        &[
            first,
            "requests",
            "errors",
            "TTFT p50 [95 % CI]",
            "TTFT p95 [95 % CI]",
            "tokens/s (median)",
            "e2e (median)",
            mix_head,
        ],
        &[7],
    );
    for s in list {
        t.rows.push(vec![
            Cell::plain(s.name.clone()),
            Cell::plain(s.ttft.requests.to_string()),
            Cell::plain(percent(s.ttft.error_rate)),
            cell(Unit::Ms, &s.ttft.p50, false),
            cell(Unit::Ms, &s.ttft.p95, false),
            cell(Unit::TokS, &s.tokens_per_s, false),
            Cell::plain(point(Unit::Ms, &s.e2e)),
            Cell::plain(mix(&s.mix)),
        ]);
    }
    t
}

fn providers(p: &Providers) -> Entry {
    let or_dash = |s: &Option<String>| s.clone().unwrap_or_else(|| DASH.into());
    Entry {
        provenance: p.provenance.as_str(),
        summary: words::scoped(&p.scope, words::providers(p)),
        facts: vec![
            fact("fastest first token", or_dash(&p.fastest_first_token)),
            fact("highest throughput", or_dash(&p.highest_throughput)),
            fact("fastest completion", or_dash(&p.fastest_completion)),
        ],
        tables: vec![
            provider_table(
                "Per routing strategy",
                "strategy",
                &p.strategies,
                "served by",
            ),
            provider_table(
                "Per served provider",
                "provider",
                &p.providers,
                "strategies",
            ),
        ],
    }
}

fn routes(r: &Routes) -> Entry {
    let mut paths = Table::new(
        "Per app path (TTFT of warm requests; funnel over every app request)",
        &[
            "path",
            "warm n",
            "TTFT p50 [95 % CI]",
            "TTFT p95 [95 % CI]",
            "sent",
            "failed",
            "reported a route",
            "reached the path",
            "routes reported",
            "funnel",
        ],
        &[8, 9],
    );
    for p in &r.paths {
        paths.rows.push(vec![
            Cell::plain(p.path.clone()),
            Cell::plain(p.ttft.n.to_string()),
            cell(Unit::Ms, &p.ttft.p50, false),
            cell(Unit::Ms, &p.ttft.p95, false),
            Cell::plain(p.funnel.sent.to_string()),
            Cell::plain(p.funnel.failed.to_string()),
            Cell::plain(p.funnel.reported.to_string()),
            Cell::plain(p.funnel.reached.to_string()),
            Cell::plain(mix(&p.funnel.routes)),
            Cell::plain(words::funnel(&p.path, &p.funnel)),
        ]);
    }
    let mut tables = vec![paths];
    if !r.routes.is_empty() {
        let mut t = Table::new(
            "Warm TTFT per reported route",
            &["route", "n", "TTFT p50 [95 % CI]", "TTFT p95 [95 % CI]"],
            &[],
        );
        for s in &r.routes {
            t.rows.push(vec![
                Cell::plain(s.route.clone()),
                Cell::plain(s.ttft.n.to_string()),
                cell(Unit::Ms, &s.ttft.p50, false),
                cell(Unit::Ms, &s.ttft.p95, false),
            ]);
        }
        tables.push(t);
    }
    Entry {
        provenance: r.provenance.as_str(),
        summary: words::scoped(&r.scope, words::routes(r)),
        facts: vec![fact(
            "fastest path",
            r.fastest_path.clone().unwrap_or_else(|| DASH.into()),
        )],
        tables,
    }
}

fn drift(d: &Drift) -> Entry {
    let mut days = Table::new(
        "Per UTC day",
        &[
            "day",
            "sessions",
            "app n",
            "app TTFT p50 [95 % CI]",
            "app TTFT p95 [95 % CI]",
            "ping RTT p50",
        ],
        &[],
    );
    for day in &d.days {
        days.rows.push(vec![
            Cell::plain(day.day.clone()),
            Cell::plain(day.sessions.to_string()),
            Cell::plain(day.app.n.to_string()),
            cell(Unit::Ms, &day.app.p50, false),
            cell(Unit::Ms, &day.app.p95, false),
            Cell::plain(
                day.ping
                    .as_ref()
                    .map_or_else(|| DASH.to_string(), |p| point(Unit::Ms, &p.p50)),
            ),
        ]);
    }
    let mut tables = vec![days];
    if !d.changes.is_empty() {
        let mut t = Table::new(
            "Day to day",
            &[
                "from → to",
                "app median change [95 % CI]",
                "verdict",
                "ping median change [95 % CI]",
                "the network's doing",
                "summary",
            ],
            &[2, 4, 5],
        );
        for ch in &d.changes {
            t.rows.push(vec![
                Cell::plain(format!("{} → {}", ch.from, ch.to)),
                cell(Unit::Ms, &ch.app.median_difference, true),
                Cell::plain(words::verdict(&ch.app).to_string()),
                cell(Unit::Ms, &ch.ping_change.estimate, true),
                Cell::plain(if ch.network_explained { "yes" } else { "no" }.to_string()),
                Cell::plain(words::day_change(ch)),
            ]);
        }
        tables.push(t);
    }
    Entry {
        provenance: d.provenance.as_str(),
        summary: words::scoped(&d.label(), words::drift(d)),
        facts: Vec::new(),
        tables,
    }
}

/// One session's client clock: its first sentence as the summary, the rest as facts.
fn clock_entry(c: &firsttoken_analyze::diagnose::SessionClock, threshold_ms: f64) -> Entry {
    let mut lines = words::session_clock(c, threshold_ms).into_iter();
    Entry {
        provenance: "measured",
        summary: lines.next().map(|(_, l)| l).unwrap_or_default(),
        facts: lines.map(|(name, l)| fact(name, l)).collect(),
        tables: Vec::new(),
    }
}

/// The diagnostic sections in reading order; `concurrency_plot` and
/// `providers_plot` sit in their sections. The client-clock section is
/// there only when some session recorded its clock or start lag.
pub(crate) fn sections(a: &Analysis, concurrency_plot: Plot, providers_plot: Plot) -> Vec<Section> {
    let mut out = all_sections(a, concurrency_plot, providers_plot);
    if !a.clock.sessions.is_empty() {
        out.push(Section {
            id: "clock",
            title: "The measuring client's clock",
            intro: "Arrivals stamped with the kernel's receive time do not include the client's own lag; the client lag (kernel receive → handled) shows how far behind the client ran.",
            plot: None,
            entries: a
                .clock
                .sessions
                .iter()
                .map(|c| clock_entry(c, a.clock.threshold_ms))
                .collect(),
            empty: "No session recorded its clock.",
        });
    }
    out
}

fn all_sections(a: &Analysis, concurrency_plot: Plot, providers_plot: Plot) -> Vec<Section> {
    vec![
        Section {
            id: "overhead",
            title: "App overhead",
            intro: "How much later the first token arrives through the app than straight from the provider: warm app TTFT − direct TTFT, in sessions that have both.",
            plot: None,
            entries: a.overhead.iter().map(|o| overhead(a, o)).collect(),
            empty: "No session has both app and direct requests.",
        },
        Section {
            id: "connection",
            title: "Connection cost",
            intro: "What a new connection adds to the first token: fresh − warm TTFT, split into DNS, TCP and TLS.",
            plot: None,
            entries: a.connection.iter().map(connection).collect(),
            empty: "No fresh-connection requests in these sessions.",
        },
        Section {
            id: "concurrency",
            title: "Concurrency wall",
            intro: "Does the app slow down when k requests arrive together?",
            plot: Some(concurrency_plot),
            entries: a.concurrency.iter().map(concurrency).collect(),
            empty: "No concurrency phase in these sessions.",
        },
        Section {
            id: "cold",
            title: "Cold start",
            intro: "Each probe sent after an idle gap, against the warm distribution of its sessions.",
            plot: None,
            entries: a.cold.iter().map(cold).collect(),
            empty: "No cold probes in these sessions.",
        },
        Section {
            id: "providers",
            title: "Providers and routing strategies",
            intro: "Direct requests per routing strategy and per provider that served them: first token against throughput.",
            plot: Some(providers_plot),
            entries: a.providers.iter().map(providers).collect(),
            empty: "No direct-to-provider requests in these sessions.",
        },
        Section {
            id: "routes",
            title: "Paths and routes",
            intro: "How each app path performs, and whether requests took the route they were meant to.",
            plot: None,
            entries: a.routes.iter().map(routes).collect(),
            empty: "No app requests with a path in these sessions.",
        },
        Section {
            id: "drift",
            title: "Drift",
            intro: "Day-to-day change in warm TTFT, next to the change in ping RTT, so a slower day can be told apart from a slower network.",
            plot: None,
            entries: a.drift.iter().map(drift).collect(),
            empty: "No warm requests in these sessions.",
        },
    ]
}
