//! Each diagnostic section: one entry per item (provenance kind, scope,
//! path), each with its sentence ([`crate::words`]), its named figures and
//! its tables, every number from [`crate::format`].

use firsttoken_analyze::diagnose::{
    ColdStart, ColdThreshold, ConcurrencyWall, ConnectionCost, Drift, Overhead, ProviderStats,
    Providers, Routes, Share,
};
use firsttoken_analyze::{Analysis, MetricSummary};

use super::{Fact, Laid, PlotSlot, Section, SectionId, TableData, fact, header};
use crate::format::{
    self, DASH, Unit, ms, opt, percent, point, ratio, relative, signed_stat, stat,
};
use crate::words::{self, Entry as _};

/// A summary as a table row: name, requests, error rate, n, p50, p95.
fn summary_row(name: &str, m: &MetricSummary) -> Vec<String> {
    let u = Unit::of(m.metric);
    vec![
        name.to_string(),
        m.requests.to_string(),
        percent(m.error_rate),
        m.n.to_string(),
        stat(u, &m.p50),
        stat(u, &m.p95),
    ]
}

fn summary_table(caption: &str) -> TableData {
    TableData::new(
        header(&[
            "",
            "requests",
            "errors",
            "n",
            "p50 [95 % CI]",
            "p95 [95 % CI]",
        ]),
        &[],
    )
    .captioned(caption)
    .page()
}

fn mix(shares: &[Share]) -> String {
    shares
        .iter()
        .map(|s| format!("{} {}", s.name, s.count))
        .collect::<Vec<_>>()
        .join(", ")
}

fn overhead_entry(a: &Analysis, o: &Overhead) -> Laid {
    let mut t = summary_table("TTFT in the sessions that have both");
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
        if let Some(t) = &st.total {
            facts.push(fact(
                &format!(
                    "the app's own total server time ({})",
                    words::server_total_source(t)
                ),
                stat(Unit::Ms, &t.median),
            ));
        }
        let mut t = TableData::new(
            header(&["phase", "counted as", "n", "median [95 % CI]"]),
            &[1],
        )
        .captioned("The app's own phases (Server-Timing)")
        .page();
        for (kind, parts) in [
            ("app overhead", &st.parts),
            ("model or total", &st.model_parts),
        ] {
            for p in parts {
                t.rows.push(vec![
                    match firsttoken_record::timing_header(&p.name) {
                        Some(h) => format!("{h} (header)"),
                        None => p.name.clone(),
                    },
                    kind.to_string(),
                    p.n.to_string(),
                    stat(Unit::Ms, &p.median),
                ]);
            }
        }
        tables.push(t);
    }
    Laid {
        sentence: words::overhead_with(o, crate::doc_traces::split_for(a, o)),
        facts,
        tables,
    }
}

/// App overhead: app TTFT − direct TTFT.
pub(super) fn overhead(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Overhead);
    s.add_entries(&a.overhead, |o| overhead_entry(a, o));
    s
}

fn connection_entry(cc: &ConnectionCost) -> Laid {
    let mut t = summary_table("TTFT by connection");
    t.rows.push(summary_row("fresh connection", &cc.fresh));
    t.rows
        .push(summary_row("reused connection (warm)", &cc.warm));
    let mut facts = vec![
        fact(
            "sessions with fresh and warm requests",
            cc.sessions.to_string(),
        ),
        fact(
            "cost (median)",
            signed_stat(Unit::Ms, &cc.cost_median.estimate),
        ),
        fact("cost (p95)", signed_stat(Unit::Ms, &cc.cost_p95)),
        fact("DNS lookup (median)", words::phase_time(&cc.dns)),
        fact("TCP connect (median)", words::phase_time(&cc.connect)),
        fact("TLS handshake (median)", words::phase_time(&cc.tls)),
        fact("other (cost − DNS − TCP − TLS)", opt(Unit::Ms, cc.other_ms)),
    ];
    facts.extend(cc.tls_by_handshake.iter().map(|h| {
        fact(
            &format!(
                "TLS handshake, {} (median, n={})",
                h.handshake.as_str(),
                h.n
            ),
            stat(Unit::Ms, &h.tls),
        )
    }));
    Laid {
        sentence: words::connection(cc),
        facts,
        tables: vec![t],
    }
}

/// Connection cost: fresh − warm TTFT.
pub(super) fn connection(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Connection);
    s.add_entries(&a.connection, connection_entry);
    s
}

/// One wall's levels; led by the wall's label when there are several
/// (paths, code versions), so no row reads as another's.
fn wall_table(w: &ConcurrencyWall, several: bool) -> Option<TableData> {
    let label = match w.label() {
        l if l.is_empty() => w.provenance.as_str().to_string(),
        l => l,
    };
    let lead = usize::from(several);
    let mut head = vec![
        "k",
        "requests",
        "errors",
        "n",
        "TTFT p50",
        "÷ baseline [CI]",
        "serial (k+1)/2",
        "ideal",
    ];
    if several {
        head.insert(0, "setup");
    }
    let mut t = TableData::new(header(&head), &[]).page_columns(&[lead + 1, lead + 2]);
    for l in &w.levels {
        let mut row = vec![
            l.concurrency.to_string(),
            l.ttft.requests.to_string(),
            percent(l.ttft.error_rate),
            l.ttft.n.to_string(),
            stat(Unit::Ms, &l.ttft.p50),
            stat(Unit::Ratio, &l.ratio.estimate),
            ratio(l.serial_model),
            ratio(l.ideal),
        ];
        if several {
            row.insert(0, label.clone());
        }
        t.rows.push(row);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// The concurrency wall, one table per wall; the page draws the ratios.
pub(super) fn concurrency(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Concurrency);
    s.plots = vec![PlotSlot::Concurrency];
    s.plots_lead = true;
    let several = a.concurrency.len() > 1;
    s.add_entries(&a.concurrency, |w| Laid {
        sentence: words::concurrency(w),
        facts: vec![
            fact("baseline", w.baseline.to_string()),
            fact("baseline median", stat(Unit::Ms, &w.baseline_median)),
            fact("effective parallelism", words::parallelism(w)),
            fact("verdict", words::wall_verdict(w.verdict).to_string()),
        ],
        tables: wall_table(w, several).into_iter().collect(),
    });
    s
}

/// Cold probes listed in the text formats (all of them on the page and in
/// the JSON report's analysis).
const COLD_PROBES_IN_TEXT: usize = 20;

fn cold_entry(cs: &ColdStart) -> Laid {
    let beyond_head = match cs.threshold {
        Some(ColdThreshold::P99) => "beyond warm p99",
        _ => "beyond warm max",
    };
    let mut t = TableData::new(
        header(&[
            "session",
            "#",
            "started (UTC)",
            "path",
            "TTFT",
            "− warm median",
            "× warm median",
            "warm below it",
            beyond_head,
            "error",
        ]),
        &[2, 3, 8, 9],
    )
    // When each probe went out needs the page's width; the text formats
    // name a probe by its session and sequence number, and list the first
    // probes only: a store kept for weeks holds thousands.
    .page_columns(&[2])
    .text_rows(COLD_PROBES_IN_TEXT);
    for p in &cs.probes {
        t.rows.push(vec![
            p.session_id.clone(),
            p.seq.to_string(),
            p.started_at.clone(),
            p.path.clone().unwrap_or_else(|| DASH.into()),
            opt(Unit::Ms, p.ttft_ms),
            p.excess_ms
                .map_or_else(|| DASH.into(), |v| format::signed(Unit::Ms, v)),
            opt(Unit::Ratio, p.ratio),
            format::percent(p.warm_rank),
            match p.beyond_warm {
                Some(true) => "yes",
                Some(false) => "no",
                None => DASH,
            }
            .to_string(),
            p.error.clone().unwrap_or_else(|| DASH.into()),
        ]);
    }
    let mut facts = vec![fact("warm median", stat(Unit::Ms, &cs.warm_median))];
    if let (Some(th), Some(v)) = (cs.threshold, cs.threshold_ms) {
        facts.push(fact(
            "a probe counts beyond",
            words::cold_threshold(th, v, cs.warm_n),
        ));
    }
    facts.push(fact(
        "probes beyond",
        format!("{} of {}", cs.beyond, cs.judged),
    ));
    facts.push(fact(
        "left out of a probe on a new connection",
        words::new_connection_left_out(cs.new_connection_ms),
    ));
    Laid {
        sentence: words::cold(cs),
        facts,
        tables: vec![t],
    }
}

/// Cold start: every probe, against the warm distribution of its sessions.
pub(super) fn cold(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Cold);
    s.add_entries(&a.cold, cold_entry);
    s
}

/// One row per strategy, then per served provider.
fn provider_table(p: &Providers) -> Option<TableData> {
    let mut t = TableData::new(
        header(&[
            "strategy / provider",
            "requests",
            "errors",
            "n",
            "TTFT p50",
            "TTFT p95",
            "tokens/s p50",
            "completion p50",
            "providers / strategies",
        ]),
        &[8],
    )
    .page_columns(&[1, 2, 5, 8]);
    let row = |s: &ProviderStats| {
        vec![
            s.name.clone(),
            s.ttft.requests.to_string(),
            percent(s.ttft.error_rate),
            s.ttft.n.to_string(),
            stat(Unit::Ms, &s.ttft.p50),
            stat(Unit::Ms, &s.ttft.p95),
            stat(Unit::TokS, &s.tokens_per_s),
            stat(Unit::Ms, &s.e2e),
            mix(&s.mix),
        ]
    };
    t.rows
        .extend(p.strategies.iter().chain(&p.providers).map(row));
    (!t.rows.is_empty()).then_some(t)
}

/// Providers and routing strategies (direct requests); the page draws
/// first token against throughput.
pub(super) fn providers(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Providers);
    s.plots = vec![PlotSlot::Providers];
    s.plots_lead = true;
    let or_dash = |s: &Option<String>| s.clone().unwrap_or_else(|| DASH.into());
    s.add_entries(&a.providers, |p| Laid {
        sentence: words::providers(p),
        facts: vec![
            fact("fastest first token", or_dash(&p.fastest_first_token)),
            fact("highest throughput", or_dash(&p.highest_throughput)),
            fact("fastest completion", or_dash(&p.fastest_completion)),
        ],
        tables: provider_table(p).into_iter().collect(),
    });
    s
}

fn routes_entry(r: &Routes) -> Laid {
    let mut paths = TableData::new(
        header(&[
            "path",
            "warm n",
            "TTFT p50 [95 % CI]",
            "TTFT p95 [95 % CI]",
            "sent",
            "failed",
            "reported a route",
            "reached the path",
            "routes reported",
        ]),
        &[8],
    )
    .captioned("Per app path (TTFT of warm requests; funnel over every app request)")
    .page();
    for p in &r.paths {
        paths.rows.push(vec![
            p.path.clone(),
            p.ttft.n.to_string(),
            stat(Unit::Ms, &p.ttft.p50),
            stat(Unit::Ms, &p.ttft.p95),
            p.funnel.sent.to_string(),
            p.funnel.failed.to_string(),
            p.funnel.reported.to_string(),
            p.funnel.reached.to_string(),
            mix(&p.funnel.routes),
        ]);
    }
    let mut tables = vec![paths];
    if !r.routes.is_empty() {
        let mut t = TableData::new(
            header(&["route", "n", "TTFT p50 [95 % CI]", "TTFT p95 [95 % CI]"]),
            &[],
        )
        .captioned("Warm TTFT per reported route")
        .page();
        for s in &r.routes {
            t.rows.push(vec![
                s.route.clone(),
                s.ttft.n.to_string(),
                stat(Unit::Ms, &s.ttft.p50),
                stat(Unit::Ms, &s.ttft.p95),
            ]);
        }
        tables.push(t);
    }
    Laid {
        sentence: words::routes(r),
        facts: vec![fact(
            "fastest path",
            r.fastest_path.clone().unwrap_or_else(|| DASH.into()),
        )],
        tables,
    }
}

/// Paths and routes: each path's funnel and whether requests took the
/// route they were meant to.
pub(super) fn routes(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Routes);
    s.add_entries(&a.routes, routes_entry);
    for r in &a.routes {
        for p in &r.paths {
            s.push(words::scoped(&r.scope, words::funnel(&p.path, &p.funnel)));
        }
        for p in &r.paths {
            if let Some(b) = words::buffering(&p.path, &p.buffering) {
                s.push(words::scoped(&r.scope, b));
            }
        }
    }
    s
}

fn drift_entry(d: &Drift) -> Laid {
    let mut days = TableData::new(
        header(&[
            "day",
            "sessions",
            "app n",
            "app TTFT p50 [95 % CI]",
            "app TTFT p95 [95 % CI]",
            "ping RTT p50",
        ]),
        &[],
    )
    .captioned("Per UTC day")
    .page();
    for day in &d.days {
        days.rows.push(vec![
            day.day.clone(),
            day.sessions.to_string(),
            day.app.n.to_string(),
            stat(Unit::Ms, &day.app.p50),
            stat(Unit::Ms, &day.app.p95),
            day.ping
                .as_ref()
                .map_or_else(|| DASH.to_string(), |p| point(Unit::Ms, &p.p50)),
        ]);
    }
    let mut tables = vec![days];
    if !d.changes.is_empty() {
        let mut t = TableData::new(
            header(&[
                "from → to",
                "app median change [95 % CI]",
                "verdict",
                "ping median change [95 % CI]",
                "the network's doing",
                "summary",
            ]),
            &[2, 4, 5],
        )
        .captioned("Day to day")
        .page();
        for ch in &d.changes {
            t.rows.push(vec![
                format!("{} → {}", ch.from, ch.to),
                signed_stat(Unit::Ms, &ch.app.median_difference),
                words::verdict(&ch.app).to_string(),
                signed_stat(Unit::Ms, &ch.ping_change.estimate),
                if ch.network_explained { "yes" } else { "no" }.to_string(),
                words::day_change(ch),
            ]);
        }
        tables.push(t);
    }
    Laid {
        sentence: words::drift(d),
        facts: Vec::<Fact>::new(),
        tables,
    }
}

/// Day-to-day drift in warm TTFT beside the ping's.
pub(super) fn drift(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Drift);
    s.add_entries(&a.drift, drift_entry);
    s
}
