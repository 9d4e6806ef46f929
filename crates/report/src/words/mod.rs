//! Every sentence of a report, one builder per kind of finding, used by
//! the terminal, Markdown, HTML and JSON outputs alike.
//!
//! Words follow intervals: a sentence says "adds", "faster", "slower" or
//! any other direction only when the finding's [`Direction`] is an
//! increase or a decrease — its interval excludes the null value (and
//! clears the noise threshold where one applies). Otherwise it says what
//! the interval says: "no detectable difference" only when the interval
//! reaches the null and stays inside the material band, "a difference too
//! small to matter (…, inside the ±5 % band)" when it excludes the null
//! but stays inside the band, "inconclusive at this n" when it reaches past
//! the band, or "too few samples (n = X, needs Y)". Numbers come from
//! [`crate::format`].

use firsttoken_analyze::diagnose::{
    ColdStart, ConcurrencyWall, ConnectionCost, DayChange, Drift, Funnel, Overhead, PathScope,
    PhaseTime, ProviderStats, Providers, Routes, WallVerdict,
};
use firsttoken_analyze::{Comparison, Direction, Finding, Stat};
use firsttoken_record::session::Provenance;

use crate::format::{self, Unit, ms, ratio, signed_stat, stat, too_few};

pub mod check;
mod clock;
mod cold;
mod comparison;
pub mod conversation;
pub mod demo;
pub mod engine;
pub mod engine_metrics;
mod findings;
pub mod flow;
mod limits;
pub mod plan;
pub mod render;
mod routes;
pub mod run;
pub mod sections;
pub mod session;
pub mod traces;
pub use clock::{client_clock, session_clock};
pub use cold::{cold, cold_finding, cold_threshold, new_connection_left_out};
pub use comparison::{comparison, verdict};
pub(crate) use comparison::{comparison_band, judged, withheld_comparison};
pub use findings::{NO_FINDINGS, finding, line as finding_line, section_name, wait};
pub use limits::{NO_LIMITS, limit, limit_kind, limit_lines, limits};
pub use routes::{ASTRAY_LISTED, buffering, funnel, routes};

/// The phrase for a finding that states no direction and whose interval
/// lies inside the material band.
pub const NO_DIFFERENCE: &str = "no detectable difference";

/// The phrase for a finding whose interval reaches the null and past the
/// material band: neither a change nor its absence is shown.
pub const INCONCLUSIVE: &str = "inconclusive at this n";

/// The phrase for a finding whose interval excludes the null but lies
/// inside the material band: a change is shown, smaller than the band.
pub const TOO_SMALL_TO_MATTER: &str = "a difference too small to matter";

/// The phrase for a direction that is no change: [`NO_DIFFERENCE`],
/// [`TOO_SMALL_TO_MATTER`] or [`INCONCLUSIVE`] (and, for the other
/// directions, the first).
pub fn undecided(d: Direction) -> &'static str {
    match d {
        Direction::Inconclusive => INCONCLUSIVE,
        Direction::TooSmallToMatter => TOO_SMALL_TO_MATTER,
        _ => NO_DIFFERENCE,
    }
}

/// The band a finding's interval lies inside: `inside the ±5 % band` for
/// a ratio (null 1), `inside the ±30 ms band` for a difference.
pub(crate) fn band(f: &Finding, unit: Unit) -> String {
    if f.null == 1.0 {
        format!("inside the {} band", format::band(f.material))
    } else {
        format!("inside the ±{} band", format::value(unit, f.material))
    }
}

/// A finding that is no change, with its figure: `no detectable
/// difference (+1.2 ms [−3.0 ms, 5.1 ms])`, `a difference too small to
/// matter (−4.2 ms [−7.5 ms, −0.9 ms], inside the ±30 ms band)`.
pub(crate) fn undecided_figure(f: &Finding, unit: Unit, figure: &str) -> String {
    match f.direction {
        Direction::TooSmallToMatter => {
            format!("{TOO_SMALL_TO_MATTER} ({figure}, {})", band(f, unit))
        }
        d => format!("{} ({figure})", undecided(d)),
    }
}

/// The caption of the TTFT-per-group table: the one pooling rule and the
/// one withholding rule.
pub const GROUPS_CAPTION: &str = "one row per phase (concurrency per level c, direct requests per strategy): phases, app and direct never pool; \"– (n < 20)\": a percentile withheld for too few samples (p50 needs 2, p90 10, p95 20, p99 100); a group of one is its value";

/// The caption of the first-output table (turns that called a tool).
pub const FIRST_OUTPUT_CAPTION: &str = "first output of the turns that called a tool: the earlier of the first text token and the first tool call (TTFT above counts text only; a turn that only calls tools has no TTFT)";

/// A wall's effective parallelism as its verdict supports it: the fitted
/// figure where the wall limits the server (`1.0`, `2.4`); for a server
/// that scales, no figure (a ratio near 1 fits any large number):
/// `more than the highest level tried (c = 5)`; `unknown at this n` else.
pub fn parallelism(w: &ConcurrencyWall) -> String {
    let top = w.levels.iter().map(|l| l.concurrency).max().unwrap_or(1);
    match (w.verdict, w.effective_parallelism) {
        (WallVerdict::OneAtATime | WallVerdict::Limited, Some(p)) => format!("{p:.1}"),
        (WallVerdict::Scales, _) => format!("more than the highest level tried (c = {top})"),
        _ => "unknown at this n".to_string(),
    }
}

/// Below a summary whose percentiles are withheld: the one rule.
pub const WITHHELD_NOTE: &str =
    "–: a percentile withheld for too few values (p50 needs 2, p90 10, p95 20, p99 100)";

/// What a group pools of groups that behave differently, when its keys
/// left them out: `paths pooled`, `paths and code versions pooled`.
pub fn pools(keys: &[firsttoken_analyze::GroupKey]) -> Option<String> {
    use firsttoken_analyze::GroupKey;
    let names: Vec<&str> = keys
        .iter()
        .map(|k| match k {
            GroupKey::Path => "paths",
            GroupKey::CodeVersion => "code versions",
            other => other.as_str(),
        })
        .collect();
    match names.as_slice() {
        [] => None,
        [one] => Some(format!("{one} pooled")),
        [init @ .., last] => Some(format!("{} and {last} pooled", init.join(", "))),
    }
}

/// A connection phase no request went through (DNS for an IP address,
/// TLS over plain HTTP): not a 0 ms median, nor too few samples.
pub const NOT_DONE: &str = "not done";

/// A connection phase's median with its interval, or [`NOT_DONE`].
pub fn phase_time(p: &PhaseTime) -> String {
    match p {
        PhaseTime::NotDone => NOT_DONE.to_string(),
        PhaseTime::Done(s) => stat(Unit::Ms, s),
    }
}

/// Why a change has no interval: `too few samples (n = 3, needs 10)`.
fn withheld(estimate: &Stat, n_a: usize, n_b: usize) -> String {
    match *estimate {
        Stat::TooSmall { n, needed } => too_few(n, needed),
        // An interval exists, but the samples are too few for the rank test
        // to ever be significant.
        Stat::Ok(_) => format::too_few_for_test(n_a, n_b),
    }
}

/// A sentence under a scope label (`v2: …`, the setup's values: see
/// [`short_scope`]) when the report covers several setups, so no figure
/// reads as pooled across them.
pub fn scoped(scope: &str, sentence: String) -> String {
    let scope = short_scope(scope);
    if scope.is_empty() {
        sentence
    } else {
        format!("{scope}: {sentence}")
    }
}

/// A scope or label as its values only: `code_version=before` → `before`,
/// `code_version=v2 · path chat` → `v2 · chat`; the Sessions section
/// names the keys.
pub fn short_scope(scope: &str) -> String {
    scope
        .split(" · ")
        .map(|p| {
            let p = p.strip_prefix("path ").unwrap_or(p);
            // `key=value` parts only: a pooled summary's label keeps its words.
            if p.contains('=') && !p.contains('(') {
                firsttoken_analyze::findings::short_label(p, None)
            } else {
                p.to_string()
            }
        })
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The name of the app paths a diagnostic describes: `chat`, or
/// `all paths pooled (chat, docs), summary only` for the pooled figure;
/// empty when the app has no named paths.
pub fn paths_label(paths: &PathScope) -> String {
    match paths {
        PathScope::One { path: Some(p) } => p.clone(),
        PathScope::Pooled { paths } if !paths.is_empty() => {
            format!("all paths pooled ({}), summary only", paths.join(", "))
        }
        _ => String::new(),
    }
}

/// A diagnostic's entry: it describes one provenance kind and, when a
/// report covers several setups, one scope (`code_version=v2`), and, for
/// the per-path diagnostics, one app path or the labelled pooled summary.
pub trait Entry {
    /// The provenance kind of every row behind it.
    fn provenance(&self) -> Provenance;
    /// Its scope, empty when the report covers one setup.
    fn scope(&self) -> &str;
    /// The app paths it describes; `None` for diagnostics that are not per
    /// path (providers use direct requests; routes list every path).
    fn paths(&self) -> Option<&PathScope> {
        None
    }
    /// Its full label, short: the setup's values and the path
    /// (`v2 · chat`), empty when there is nothing to tell apart.
    fn label(&self) -> String {
        let paths = self.paths().map(paths_label).unwrap_or_default();
        let scope = short_scope(self.scope());
        match (scope.as_str(), paths.as_str()) {
            ("", p) => p.to_string(),
            (s, "") => s.to_string(),
            (s, p) => format!("{s} · {p}"),
        }
    }
}

macro_rules! entries {
    ($($t:ty),*) => {$(
        impl Entry for $t {
            fn provenance(&self) -> Provenance {
                self.provenance
            }
            fn scope(&self) -> &str {
                &self.scope
            }
        }
    )*};
}

macro_rules! path_entries {
    ($($t:ty),*) => {$(
        impl Entry for $t {
            fn provenance(&self) -> Provenance {
                self.provenance
            }
            fn scope(&self) -> &str {
                &self.scope
            }
            fn paths(&self) -> Option<&PathScope> {
                Some(&self.paths)
            }
        }
    )*};
}

path_entries!(Overhead, ConnectionCost, ConcurrencyWall, ColdStart, Drift);
entries!(Providers, Routes);

/// App overhead: app TTFT − direct TTFT, broken down by the app's
/// Server-Timing (or said to have none).
pub fn overhead(o: &Overhead) -> String {
    overhead_with(o, None)
}

/// App overhead broken down by the path's server spans when there are
/// some (preferred over Server-Timing), else as [`overhead`].
pub fn overhead_with(
    o: &Overhead,
    spans: Option<&firsttoken_analyze::traces::SpanSplit>,
) -> String {
    if o.sessions == 0 {
        return "no session has both app and direct requests: app overhead unknown".to_string();
    }
    let f = &o.overhead_median;
    let d = signed_stat(Unit::Ms, &f.estimate);
    let mut s = match f.direction {
        Direction::TooFewSamples => {
            return format!("app overhead: {}", withheld(&f.estimate, f.n_a, f.n_b));
        }
        Direction::Increase => format!(
            "the app adds {} above the bare model at the median",
            stat(Unit::Ms, &f.estimate)
        ),
        Direction::Decrease => format!("the app is faster than the bare model at the median: {d}"),
        Direction::NoDetectableDifference => {
            format!("{NO_DIFFERENCE} between the app and the bare model at the median: {d}")
        }
        Direction::TooSmallToMatter => format!(
            "{TOO_SMALL_TO_MATTER} between the app and the bare model at the median: {d}, {}",
            band(f, Unit::Ms)
        ),
        Direction::Inconclusive => {
            format!("app vs the bare model at the median: {INCONCLUSIVE}: {d}")
        }
    };
    s.push_str(&format!(
        " (app {}, direct {}",
        format::point(Unit::Ms, &o.app.p50),
        format::point(Unit::Ms, &o.direct.p50)
    ));
    if let Some(p) = o.ping.as_ref().and_then(|p| p.p50.point()) {
        s.push_str(&format!("; ping {}", ms(p)));
    }
    s.push(')');
    if let Some(split) = spans.filter(|s| s.traced > 0) {
        s.push_str(&traces::overhead_parts(split));
        if o.server_timing.is_some() {
            s.push_str(" (preferred over its Server-Timing)");
        }
        return s;
    }
    match &o.server_timing {
        Some(st) => {
            let parts: Vec<String> = st
                .parts
                .iter()
                .filter_map(|p| p.median.point().map(|m| format!("{} {}", p.name, ms(m))))
                .collect();
            if !parts.is_empty() {
                s.push_str(&format!("; the app's own phases: {}", parts.join(", ")));
                if let Some(u) = st.unexplained_ms {
                    s.push_str(&format!(", unexplained {}", ms(u)));
                }
            }
            if let Some(t) = &st.total {
                s.push_str(&format!(
                    "; the app's own total server time {} ({}, {} requests) against its TTFT {}",
                    stat(Unit::Ms, &t.median),
                    server_total_source(t),
                    t.n,
                    format::point(Unit::Ms, &o.app.p50)
                ));
            }
        }
        None => {
            s.push_str("; the app sends no Server-Timing to break it down");
            if o.app_ttfb.point().is_some() {
                s.push_str(&format!(
                    " (its first response byte, before the stream starts: app {}, direct {})",
                    format::point(Unit::Ms, &o.app_ttfb),
                    format::point(Unit::Ms, &o.direct_ttfb)
                ));
            }
        }
    }
    s
}

/// Where the app's total server time was read: "its x-process-time
/// header" or "its Server-Timing \"total\"".
pub fn server_total_source(t: &firsttoken_analyze::diagnose::ServerTotal) -> String {
    match t.source {
        firsttoken_analyze::diagnose::TotalSource::Header => format!("its {} header", t.name),
        firsttoken_analyze::diagnose::TotalSource::ServerTiming => {
            format!("its Server-Timing {:?}", t.name)
        }
    }
}

/// Connection cost: fresh − warm TTFT, split into DNS, TCP and TLS.
pub fn connection(c: &ConnectionCost) -> String {
    if c.sessions == 0 {
        return "no session has both fresh and warm requests: connection cost unknown".to_string();
    }
    let f = &c.cost_median;
    let head = match f.direction {
        Direction::TooFewSamples => {
            return format!("connection cost: {}", withheld(&f.estimate, f.n_a, f.n_b));
        }
        Direction::Increase => format!(
            "a new connection adds {} to TTFT at the median",
            stat(Unit::Ms, &f.estimate)
        ),
        Direction::Decrease => format!(
            "a new connection lowers TTFT at the median: {}",
            signed_stat(Unit::Ms, &f.estimate)
        ),
        Direction::NoDetectableDifference => format!(
            "{NO_DIFFERENCE} between fresh and reused connections at the median: {}",
            signed_stat(Unit::Ms, &f.estimate)
        ),
        Direction::TooSmallToMatter => format!(
            "{TOO_SMALL_TO_MATTER} between fresh and reused connections at the median: {}, {}",
            signed_stat(Unit::Ms, &f.estimate),
            band(f, Unit::Ms)
        ),
        Direction::Inconclusive => format!(
            "fresh vs reused connections at the median: {INCONCLUSIVE}: {}",
            signed_stat(Unit::Ms, &f.estimate)
        ),
    };
    let part = |name: &str, p: &PhaseTime| match p {
        PhaseTime::NotDone => format!("{name} {NOT_DONE}"),
        PhaseTime::Done(s) => format!("{name} {}", format::point(Unit::Ms, s)),
    };
    let mut out = format!(
        "{head} ({}, {}, {}, other {})",
        part("dns", &c.dns),
        part("connect", &c.connect),
        part("tls", &c.tls),
        format::opt(Unit::Ms, c.other_ms)
    );
    if !c.tls_by_handshake.is_empty() {
        let kinds: Vec<String> = c
            .tls_by_handshake
            .iter()
            .map(|h| {
                format!(
                    "{} {} (n={})",
                    h.handshake.as_str(),
                    stat(Unit::Ms, &h.tls),
                    h.n
                )
            })
            .collect();
        out.push_str(&format!("; TLS handshake by kind: {}", kinds.join(", ")));
    }
    let s = &c.setup;
    out.push_str(&match s.direction {
        Direction::Increase => format!(
            "; measured directly, each new connection spends {} setting up (n={})",
            stat(Unit::Ms, &s.estimate),
            s.n_a
        ),
        Direction::TooFewSamples => format!(
            "; set-up per new connection: {}",
            withheld(&s.estimate, s.n_a, s.n_b)
        ),
        // Set-up time is never negative: short of an increase, its
        // interval reaches into the noise band around zero.
        _ => format!(
            "; set-up per new connection {}, within the noise of TTFT",
            stat(Unit::Ms, &s.estimate)
        ),
    });
    out
}

/// The concurrency wall.
pub fn concurrency(w: &ConcurrencyWall) -> String {
    let top = w
        .levels
        .iter()
        .rev()
        .find(|l| l.concurrency > 1 && l.ratio.estimate.estimate().is_some());
    let Some(top) = top else {
        let levels: Vec<String> = w
            .levels
            .iter()
            .map(|l| format!("c={} n={}", l.concurrency, l.ttft.n))
            .collect();
        return format!(
            "too few samples to judge concurrency (baseline: {}, levels: {})",
            w.baseline,
            levels.join(", ")
        );
    };
    let k = top.concurrency;
    let at = format!("{} at c={k}", stat(Unit::Ratio, &top.ratio.estimate));
    let serial = ratio(top.serial_model);
    match (w.verdict, top.ratio.direction) {
        (WallVerdict::Insufficient, _) => format!(
            "cannot tell: {at} — the interval holds both the ideal {} and the serial model {serial}; send more requests per level",
            ratio(1.0)
        ),
        (WallVerdict::OneAtATime, _) => {
            format!("behaves like a one-at-a-time server: {at}, serial model predicts {serial}")
        }
        (WallVerdict::Limited, _) => format!(
            "handles about {:.1} requests at a time: {at} (serial model {serial}, ideal {})",
            w.effective_parallelism.unwrap_or(f64::NAN),
            ratio(1.0)
        ),
        (WallVerdict::Scales, Direction::Increase) => format!(
            "TTFT rises to {at}, well below the serial model {serial}: scales over the levels tried"
        ),
        (WallVerdict::Scales, Direction::Decrease) => {
            format!("TTFT falls to {at}: scales over the levels tried")
        }
        (WallVerdict::Scales, Direction::Inconclusive) => format!(
            "{at} against the baseline ({}), clear of the serial model {serial}: scales (whether TTFT rises at all is {INCONCLUSIVE})",
            w.baseline
        ),
        (WallVerdict::Scales, Direction::TooSmallToMatter) => format!(
            "{TOO_SMALL_TO_MATTER} from the baseline ({}): {at}, {} (ideal {}, serial model {serial}): scales",
            w.baseline,
            band(&top.ratio, Unit::Ratio),
            ratio(1.0)
        ),
        (WallVerdict::Scales, _) => format!(
            "{NO_DIFFERENCE} from the baseline ({}): {at} (ideal {}, serial model {serial}): scales",
            w.baseline,
            ratio(1.0)
        ),
    }
}

/// Strategies and providers.
pub fn providers(p: &Providers) -> String {
    let tps = |s: &Stat| format::point(Unit::TokS, s);
    let pms = |s: &Stat| format::point(Unit::Ms, s);
    let find = |name: &Option<String>| -> Option<&ProviderStats> {
        name.as_ref()
            .and_then(|n| p.strategies.iter().find(|s| &s.name == n))
    };
    let Some(fast) = find(&p.fastest_first_token) else {
        return "too few direct requests to compare strategies or providers".to_string();
    };
    let unnamed = match p.provider_not_reported {
        0 => String::new(),
        n => format!("; provider not reported by the upstream ({n} requests)"),
    };
    if p.strategies.len() == 1 {
        let mix: Vec<String> = fast
            .mix
            .iter()
            .map(|m| format!("{} ×{}", m.name, m.count))
            .collect();
        let served = if mix.is_empty() {
            String::new()
        } else {
            format!("; served by {}", mix.join(", "))
        };
        return format!(
            "{}: first token {}, {}, done in {} (medians){served}{}{unnamed}",
            fast.name,
            pms(&fast.ttft.p50),
            tps(&fast.tokens_per_s),
            pms(&fast.e2e),
            provider_leaders(p),
        );
    }
    let mut s = format!(
        "lowest median first token: {} ({}, {})",
        fast.name,
        pms(&fast.ttft.p50),
        tps(&fast.tokens_per_s)
    );
    if let Some(c) = &p.ttft_comparison {
        s.push_str(&format!("; against {}: {}", c.b, judged(c)));
    }
    if let Some(t) = find(&p.highest_throughput) {
        s.push_str(&format!(
            "; highest median throughput: {} ({}, first token {})",
            t.name,
            tps(&t.tokens_per_s),
            pms(&t.ttft.p50)
        ));
        if let Some(c) = &p.throughput_comparison {
            s.push_str(&format!("; against {}: {}", c.b, judged(c)));
        }
    }
    if let Some(d) = find(&p.fastest_completion) {
        s.push_str(&format!(
            "; lowest median completion: {} ({})",
            d.name,
            pms(&d.e2e)
        ));
    }
    s.push_str(&provider_leaders(p));
    s.push_str(&unnamed);
    s
}

/// `; providers: first token led by A (median) against B: <judged>; …`,
/// or nothing with fewer than two served providers. "Led" names the
/// ranking; only the judged comparison states a direction.
fn provider_leaders(p: &Providers) -> String {
    let one = |what: &str, c: &Option<Comparison>| {
        c.as_ref().map(|c| {
            format!(
                "{what} led by {} ({}) against {}: {}",
                c.a,
                format::point(Unit::of(c.metric), &c.median_a),
                c.b,
                judged(c)
            )
        })
    };
    let parts: Vec<String> = [
        one("first token", &p.first_token_leader),
        one("throughput", &p.throughput_leader),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; providers: {}", parts.join("; "))
    }
}

fn direction_word(d: Direction, up: &'static str, down: &'static str) -> &'static str {
    match d {
        Direction::Increase => up,
        Direction::Decrease => down,
        Direction::NoDetectableDifference
        | Direction::TooSmallToMatter
        | Direction::Inconclusive => undecided(d),
        Direction::TooFewSamples => "too few samples",
    }
}

/// One day against the day before.
pub fn day_change(c: &DayChange) -> String {
    if c.app.direction == Direction::TooFewSamples {
        return format!(
            "{} → {}: app TTFT: {}",
            c.from,
            c.to,
            withheld_comparison(&c.app)
        );
    }
    let mut s = format!(
        "{} → {}: app TTFT {} ({}, {})",
        c.from,
        c.to,
        signed_stat(Unit::Ms, &c.app.median_difference),
        format::relative(c.app.relative_median_difference),
        direction_word(c.app.direction, "slower", "faster")
    );
    match c.ping_change.direction {
        Direction::TooFewSamples => s.push_str("; no ping baseline on both days"),
        d => s.push_str(&format!(
            "; ping RTT {} ({})",
            signed_stat(Unit::Ms, &c.ping_change.estimate),
            direction_word(d, "higher", "lower")
        )),
    }
    if c.app.direction.is_change() && c.ping_change.direction != Direction::TooFewSamples {
        s.push_str(if c.network_explained {
            ": the network explains much of it"
        } else {
            ": not the network"
        });
    }
    s
}

/// Day-to-day drift.
pub fn drift(d: &Drift) -> String {
    if d.days.len() < 2 {
        return "one day of data: no day-to-day drift to show".to_string();
    }
    let moved: Vec<String> = d
        .changes
        .iter()
        .filter(|c| c.app.direction.is_change())
        .map(day_change)
        .collect();
    if moved.is_empty() {
        let count = |want: Direction| d.changes.iter().filter(|c| c.app.direction == want).count();
        let (open, small) = (
            count(Direction::Inconclusive),
            count(Direction::TooSmallToMatter),
        );
        if open == 0 && small == 0 {
            format!(
                "{NO_DIFFERENCE} in app TTFT from day to day over {} days",
                d.days.len()
            )
        } else {
            let pairs = d.changes.len();
            // A change too small to matter is shown, so only one that
            // matters is not.
            let mut s = format!(
                "no day-to-day change in app TTFT {}shown over {} days",
                if small > 0 { "that matters " } else { "" },
                d.days.len()
            );
            if small > 0 {
                s.push_str(&format!(
                    "; {small} of {pairs} day pairs: {TOO_SMALL_TO_MATTER}"
                ));
            }
            if open > 0 {
                s.push_str(&format!("; {open} of {pairs} day pairs {INCONCLUSIVE}"));
            }
            s
        }
    } else {
        moved.join("; ")
    }
}

/// The name of a concurrency verdict.
pub fn wall_verdict(v: WallVerdict) -> &'static str {
    match v {
        WallVerdict::OneAtATime => "one request at a time",
        WallVerdict::Limited => "limited parallelism",
        WallVerdict::Scales => "scales",
        WallVerdict::Insufficient => "cannot tell",
    }
}

/// `a, b, c and 2 more`.
pub(super) fn list(ids: &[String]) -> String {
    const SHOWN: usize = 5;
    if ids.is_empty() {
        return "rows without session metadata".to_string();
    }
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

/// A percentile's name: `median`, `p95`.
pub(crate) fn percentile_name(p: f64) -> String {
    if p == 50.0 {
        "median".to_string()
    } else {
        format!("p{p}")
    }
}

/// The line below a table the text reports cut short: `… and 23012 more
/// rows (every row: --format json or html)`.
pub fn more_rows(n: usize) -> String {
    format!(
        "… and {} more {} (every row: --format json or html)",
        n,
        if n == 1 { "row" } else { "rows" }
    )
}
