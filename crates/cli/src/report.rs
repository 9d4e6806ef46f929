//! `firsttoken report`, `compare` and `check`: stored samples → analysis →
//! terminal, Markdown, JSON or HTML; before/after verdicts; CI thresholds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use firsttoken_analyze::compare::{PathComparison, compare_sessions_per_path};
use firsttoken_analyze::{
    Analysis, Comparison, Frame, FrameBuilder, GroupKey, Metric, Percentile, PhaseKind, Samples,
    Settings, analyze, attach_traces,
};
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::span::SpanRow;
use firsttoken_record::store::Store;
use firsttoken_report::format::{self as fmt, Unit};
use firsttoken_report::{ReportInput, words};

use crate::session::DEFAULT_STORE;
use crate::{EXIT_FAILED_REQUESTS, EXIT_USAGE};

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables for a terminal (100 columns).
    Terminal,
    /// Markdown.
    Markdown,
    /// JSON (docs/schema/report.v1.schema.json).
    Json,
    /// A self-contained HTML page with plots.
    Html,
}

/// Sessions to analyse.
#[derive(Debug, Args)]
pub struct Selection {
    /// Result store: a SQLite file or a postgres:// URL.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
    /// Session id or unique prefix (repeatable); default: every session in the store.
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
}

/// `report --run`.
#[derive(Debug, Args)]
pub struct RunSelection {
    /// A run across agents (`run --run-id`): the raw rows of every agent
    /// pooled, each planned request counted once; group by `vantage` or
    /// `network` for the per-agent breakdown.
    #[arg(long = "run", value_name = "ID", conflicts_with = "sessions")]
    run: Option<String>,
}

/// What was loaded: sessions, the analysis frame and (for HTML) the rows.
pub struct Loaded {
    /// Sessions, in the order asked.
    pub sessions: Vec<SessionMeta>,
    /// Every sample as a compact table.
    pub frame: Frame,
    /// Samples kept for plots of single requests (successful, not warm-ups).
    pub rows: Vec<SampleRow>,
    /// The server spans of sessions that have any, and those sessions'
    /// counted samples that carried a trace id (to join them with).
    pub spans: Vec<SpanRow>,
    /// See `spans`.
    pub traced: Vec<SampleRow>,
}

/// Load sessions and their samples, streaming rows into the frame.
pub async fn load(store: &Store, ids: &[String], keep_rows: bool) -> anyhow::Result<Loaded> {
    let sessions = if ids.is_empty() {
        store.sessions().await?
    } else {
        let mut v = Vec::new();
        for id in ids {
            v.push(
                store
                    .session(id)
                    .await?
                    .with_context(|| format!("no session {id:?} in the store"))?,
            );
        }
        v
    };
    if sessions.is_empty() {
        bail!("the store has no sessions: run `firsttoken run` or `firsttoken demo` first");
    }
    assemble(store, sessions, None, keep_rows).await
}

/// `sessions` with their rows (`rows`, by session id; `None`: every stored
/// sample of each) streamed into a frame, and the server spans of those
/// that have any with the counted, traced rows to join them with.
pub async fn assemble(
    store: &Store,
    sessions: Vec<SessionMeta>,
    mut rows: Option<BTreeMap<String, Vec<SampleRow>>>,
    keep_rows: bool,
) -> anyhow::Result<Loaded> {
    let mut builder = FrameBuilder::new(&sessions)?;
    let (mut kept, mut spans, mut traced) = (Vec::new(), Vec::new(), Vec::new());
    for s in &sessions {
        // Sessions without spans (no receiver, or nothing arrived) keep
        // their rows out of the join: "no span" would be noise there.
        let has_spans = store.span_count(&s.id).await? > 0;
        if has_spans {
            spans.extend(store.spans(&s.id).await?);
        }
        let own = match rows.as_mut() {
            Some(by_id) => by_id.remove(&s.id).unwrap_or_default(),
            None => store.samples(&s.id).await?,
        };
        for r in own {
            builder.push(&r)?;
            if has_spans && !r.sample.warmup && r.sample.trace_id.is_some() {
                traced.push(r.clone());
            }
            if keep_rows && !r.sample.warmup && r.sample.is_ok() {
                kept.push(r);
            }
        }
    }
    Ok(Loaded {
        sessions,
        frame: builder.finish(),
        rows: kept,
        spans,
        traced,
    })
}

/// The analysis of what was loaded: the diagnostics by `keys`, then the
/// server spans joined to their samples (when any session has spans), with
/// the span groups of every session's `[traces] groups` and its direct
/// endpoint's host named as the model provider.
pub fn analyse(loaded: &Loaded, keys: &[GroupKey], settings: &Settings) -> Analysis {
    let mut analysis = analyze(&loaded.frame, &loaded.sessions, keys, settings);
    if !loaded.spans.is_empty() {
        let groups = span_groups(&loaded.sessions);
        attach_traces(
            &mut analysis,
            &loaded.traced,
            &loaded.sessions,
            &loaded.spans,
            &groups,
        );
    }
    analysis
}

/// The span group map of the stored configs.
fn span_groups(sessions: &[SessionMeta]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for s in sessions {
        let config = &s.spec["config"];
        let direct_host = config["direct"]["url"]
            .as_str()
            .and_then(|u| firsttoken_plan::Target::parse(u).ok())
            .map(|t| t.host);
        if let Some(h) = direct_host {
            out.entry(format!("host:{h}"))
                .or_insert_with(|| "model provider".to_string());
        }
        if let Some(g) = config["traces"]["groups"].as_object() {
            for (k, v) in g {
                if let Some(v) = v.as_str() {
                    out.insert(k.clone(), v.to_string());
                }
            }
        }
    }
    out
}

fn write_out(out: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match out {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

impl From<Format> for firsttoken_report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Terminal => firsttoken_report::Format::Terminal,
            Format::Markdown => firsttoken_report::Format::Markdown,
            Format::Json => firsttoken_report::Format::Json,
            Format::Html => firsttoken_report::Format::Html,
        }
    }
}

/// Render an analysis in `format`: every format gets the same input
/// (sessions, analysis, comparisons; the rows for HTML plots).
pub fn render(
    format: Format,
    loaded: &Loaded,
    analysis: &Analysis,
    comparisons: &[Comparison],
) -> anyhow::Result<String> {
    let input = ReportInput::new(&loaded.sessions, analysis, comparisons).with_rows(&loaded.rows);
    firsttoken_report::render(format.into(), &input)
        .with_context(|| format!("cannot render the {format:?} report"))
}

/// `firsttoken report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    select: Selection,
    #[command(flatten)]
    run: RunSelection,
    /// Group TTFT by these keys: network, code_version, vantage, day, path, phase, strategy, concurrency, provider, provenance.
    #[arg(long, default_value = "code_version,path")]
    group_by: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    format: Format,
    /// Output file (default: stdout).
    #[arg(long, short)]
    out: Option<PathBuf>,
}

/// Analyse and render.
pub async fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let keys = GroupKey::parse_list(&a.group_by)?;
    let store = Store::open_existing(&a.select.store).await?;
    let html = a.format == Format::Html;
    let (loaded, run) = match &a.run.run {
        Some(id) => {
            let mut run = crate::runs::load_run(&store, id, true).await?;
            (
                crate::runs::loaded(&store, &mut run, html).await?,
                Some(run),
            )
        }
        None => (load(&store, &a.select.sessions, html).await?, None),
    };
    let settings = Settings::from_sessions(&loaded.sessions);
    let mut analysis = analyse(&loaded, &keys, &settings);
    if let Some(run) = &run
        && run.start.cross_agent != firsttoken_record::run::CrossAgent::Judged
    {
        // Bursts split over agents whose clocks are not known well enough
        // cannot be judged as one level of concurrency.
        analysis.concurrency.clear();
    }
    let mut text = render(a.format, &loaded, &analysis, &[])?;
    if let Some(run) = &run {
        let head = crate::runs::head(run).join("\n");
        match a.format {
            Format::Terminal | Format::Markdown => text = format!("{head}\n\n{text}"),
            // The JSON report carries the run as its `run` object.
            Format::Json => {
                let mut v: serde_json::Value =
                    serde_json::from_str(&text).context("the JSON report does not parse")?;
                v["run"] = crate::runs::json(run);
                text = serde_json::to_string_pretty(&v)?;
                eprintln!("{head}");
            }
            // The page keeps its layout; the run's head goes to stderr.
            Format::Html => eprintln!("{head}"),
        }
    }
    write_out(a.out.as_deref(), &text)?;
    if let Some(p) = &a.out {
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Session `a` against `b` on TTFT, per path (then the labelled pooled
/// summary when there are several paths).
pub fn compare_per_path(
    frame: &Frame,
    a: &str,
    b: &str,
    phase: Option<PhaseKind>,
    settings: &Settings,
) -> anyhow::Result<Vec<PathComparison>> {
    Ok(compare_sessions_per_path(
        frame,
        a,
        b,
        phase,
        Metric::Ttft,
        settings,
    )?)
}

/// Slower on some path: judged per path, never on the pooled summary
/// (which only decides when the sessions share no path).
fn slower_somewhere(cs: &[PathComparison]) -> bool {
    let per_path = cs.iter().any(|c| c.path.is_some());
    cs.iter()
        .filter(|c| c.path.is_some() || !per_path)
        .any(|c| c.comparison.worse())
}

/// `firsttoken compare`.
#[derive(Debug, Args)]
#[command(after_help = "Sessions: firsttoken compare NEW_ID OLD_ID
Groups:   firsttoken compare --by code_version v2 v1   (every stored session, pooled by the key)
EXIT STATUS: 0 unless A is significantly slower than B (1); 2 usage error.")]
pub struct CompareArgs {
    /// Result store.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
    /// Compare groups of every stored session by this key (network, code_version, vantage, day, …)
    /// instead of two sessions; A and B are then values of the key.
    #[arg(long, value_name = "KEY")]
    by: Option<String>,
    /// The session (or group value) to judge.
    a: String,
    /// The baseline session (or group value).
    b: String,
    /// Phase whose TTFT is compared: warm, fresh, cold, direct, concurrency, rate, or all.
    #[arg(long, default_value = "warm")]
    phase: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    format: Format,
}

fn phase_arg(s: &str) -> anyhow::Result<Option<PhaseKind>> {
    if s == "all" {
        return Ok(None);
    }
    match s.parse::<PhaseKind>() {
        // Pings carry no TTFT.
        Ok(p) if p != PhaseKind::Ping => Ok(Some(p)),
        _ => bail!("unknown phase {s:?}: use warm, fresh, cold, direct, concurrency, rate or all"),
    }
}

/// Compare two sessions (or two groups); exit 0 unless A is significantly slower (1).
pub async fn compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let phase = phase_arg(&a.phase)?;
    let store = Store::open_existing(&a.store).await?;
    if let Some(by) = &a.by {
        return compare_groups_cmd(&store, by, &a, phase).await;
    }
    let loaded = load(&store, &[a.a.clone(), a.b.clone()], false).await?;
    let (ida, idb) = (loaded.sessions[0].id.clone(), loaded.sessions[1].id.clone());
    let settings = Settings::from_sessions(&loaded.sessions);
    let cs = compare_per_path(&loaded.frame, &ida, &idb, phase, &settings)?;
    let analysis = analyze(
        &loaded.frame,
        &loaded.sessions,
        &GroupKey::parse_list("code_version")?,
        &settings,
    );
    let slower = slower_somewhere(&cs);
    let comparisons: Vec<Comparison> = cs.into_iter().map(|c| c.comparison).collect();
    let text = render(a.format, &loaded, &analysis, &comparisons)?;
    write_out(None, &text)?;
    Ok(if slower {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}

/// `compare --by KEY A B`: TTFT of the rows whose KEY is A against those
/// whose KEY is B, within one phase (when given) and one provenance kind.
async fn compare_groups_cmd(
    store: &Store,
    by: &str,
    a: &CompareArgs,
    phase: Option<PhaseKind>,
) -> anyhow::Result<ExitCode> {
    let key: GroupKey = by
        .parse()
        .map_err(|e| anyhow::anyhow!("--by {by:?}: {e}"))?;
    let loaded = load(store, &[], false).await?;
    let mut keys = vec![key];
    if phase.is_some() {
        keys.push(GroupKey::Phase);
    }
    let groups = firsttoken_analyze::group::group(&loaded.frame, &keys);
    let pick = |value: &str| {
        let found: Vec<&firsttoken_analyze::Group> = groups
            .iter()
            .filter(|g| g.label.get(key).is_some_and(|v| v.to_string() == value))
            .filter(|g| {
                phase.is_none_or(|p| {
                    g.label
                        .get(GroupKey::Phase)
                        .is_some_and(|v| v.to_string() == p.as_str())
                })
            })
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(anyhow::anyhow!(
                "no rows with {by}={value}{}",
                phase
                    .map(|p| format!(" in the {} phase", p.as_str()))
                    .unwrap_or_default()
            )),
            _ => Err(anyhow::anyhow!(
                "{by}={value} spans several provenance kinds; they are never pooled — select sessions of one kind"
            )),
        }
    };
    let (ga, gb) = (pick(&a.a)?, pick(&a.b)?);
    let settings = Settings::from_sessions(&loaded.sessions);
    let c = firsttoken_analyze::compare::compare_groups(
        &loaded.frame,
        ga,
        gb,
        Metric::Ttft,
        &settings,
    )?;
    let analysis = analyse(&loaded, &[key], &settings);
    let slower = c.worse();
    write_out(
        None,
        &render(a.format, &loaded, &analysis, std::slice::from_ref(&c))?,
    )?;
    Ok(if slower {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}

/// One `--max metric=value` threshold.
#[derive(Debug, Clone, PartialEq)]
struct Threshold {
    metric: String,
    limit: f64,
}

/// Parse `ttft.p95=3s`, `e2e.p50=800ms`, `error_rate=1%`.
fn parse_threshold(s: &str) -> anyhow::Result<Threshold> {
    let (metric, value) = s
        .split_once('=')
        .with_context(|| format!("--max {s:?}: expected metric=value, e.g. ttft.p95=3s"))?;
    let metric = metric.trim().to_string();
    let value = value.trim();
    let limit = if metric == "error_rate" {
        let v = value
            .strip_suffix('%')
            .map(|p| p.trim().parse::<f64>().map(|x| x / 100.0))
            .unwrap_or_else(|| value.parse());
        v.with_context(|| {
            format!("--max {s:?}: error_rate is a fraction or a percentage, e.g. 1%")
        })?
    } else {
        let (m, p) = metric
            .split_once('.')
            .with_context(|| format!("--max {s:?}: expected METRIC.PERCENTILE, e.g. ttft.p95"))?;
        if !["ttft", "ttfb", "e2e"].contains(&m) || !["p50", "p90", "p95", "p99"].contains(&p) {
            bail!(
                "--max {s:?}: metric must be ttft, ttfb or e2e and percentile p50, p90, p95 or p99"
            );
        }
        match humantime::parse_duration(value) {
            Ok(d) => d.as_secs_f64() * 1000.0,
            Err(_) => value.parse::<f64>().with_context(|| {
                format!("--max {s:?}: the limit is a duration like 3s or 800ms")
            })?,
        }
    };
    Ok(Threshold { metric, limit })
}

/// `firsttoken check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Thresholds apply to app requests (warm, fresh, cold, concurrency, rate; warm-ups excluded) of the selected
sessions (default: the newest). EXIT STATUS: 0 all thresholds met, 1 a threshold failed or the session is
significantly slower than --against, 2 usage error.
Example: firsttoken check --max ttft.p95=3s --max error_rate=1% --against 20261130T0210"
)]
pub struct CheckArgs {
    /// Result store.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
    /// Session to check (default: the newest).
    #[arg(long)]
    session: Option<String>,
    /// Threshold METRIC=LIMIT (repeatable): ttft.p95=3s, e2e.p50=800ms, error_rate=1%.
    #[arg(long = "max", value_name = "METRIC=LIMIT")]
    max: Vec<String>,
    /// Baseline session: fail when warm TTFT is significantly slower than it.
    #[arg(long)]
    against: Option<String>,
}

fn app_values(rows: &[SampleRow], metric: &str) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.phase.is_app() && !r.sample.warmup && r.sample.is_ok())
        .filter_map(|r| match metric {
            "ttft" => r.sample.ttft_ms,
            "ttfb" => r.sample.ttfb_ms,
            _ => r.sample.e2e_ms,
        })
        .collect()
}

/// Check thresholds; the exit code says whether they held.
pub async fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let thresholds: Vec<Threshold> = match a.max.iter().map(|m| parse_threshold(m)).collect() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if thresholds.is_empty() && a.against.is_none() {
        eprintln!("error: nothing to check: give --max METRIC=LIMIT and/or --against BASELINE");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let store = Store::open_existing(&a.store).await?;
    let meta = match &a.session {
        Some(id) => store
            .session(id)
            .await?
            .with_context(|| format!("no session {id:?}"))?,
        None => store
            .sessions()
            .await?
            .into_iter()
            .next()
            .context("the store has no sessions")?,
    };
    let rows = store.samples(&meta.id).await?;
    let settings = Settings::new(meta.seed);
    let mut failed = false;
    outln!(
        "check of session {} ({}, code {})",
        meta.id,
        meta.provenance.as_str(),
        meta.labels.code_version
    );
    for t in &thresholds {
        let (value, shown) = if t.metric == "error_rate" {
            let counted: Vec<&SampleRow> = rows
                .iter()
                .filter(|r| r.phase.is_app() && !r.sample.warmup)
                .collect();
            let bad = counted.iter().filter(|r| !r.sample.is_ok()).count();
            let rate = if counted.is_empty() {
                0.0
            } else {
                bad as f64 / counted.len() as f64
            };
            (
                Some(rate),
                format!("{} ({bad} of {})", fmt::percent(Some(rate)), counted.len()),
            )
        } else {
            let (m, p) = t.metric.split_once('.').unwrap_or(("ttft", "p95"));
            let pct: f64 = p.trim_start_matches('p').parse().unwrap_or(95.0);
            let samples = Samples::new(app_values(&rows, m)).ok();
            let stat =
                samples.map(|s| s.stat(Percentile::new(pct).unwrap_or(Percentile::P95), &settings));
            match stat {
                Some(s) => (s.point(), fmt::stat(Unit::Ms, &s)),
                None => (None, "no successful app requests".to_string()),
            }
        };
        let ok = value.is_some_and(|v| v <= t.limit);
        failed |= !ok;
        let limit = if t.metric == "error_rate" {
            fmt::percent(Some(t.limit))
        } else {
            fmt::ms(t.limit)
        };
        outln!(
            "  {} {:<14} {shown}  (max {limit})",
            if ok { "PASS" } else { "FAIL" },
            t.metric
        );
    }
    if let Some(base) = &a.against {
        let loaded = load(&store, &[meta.id.clone(), base.clone()], false).await?;
        let cs = compare_per_path(
            &loaded.frame,
            &loaded.sessions[0].id,
            &loaded.sessions[1].id,
            Some(PhaseKind::Warm),
            &Settings::from_sessions(&loaded.sessions),
        )?;
        failed |= slower_somewhere(&cs);
        for c in &cs {
            let slower = c.comparison.worse();
            let verdict = match (&c.path, slower) {
                (Some(_), true) => "FAIL",
                (None, _) if cs.len() > 1 => "NOTE",
                (_, true) => "FAIL",
                _ => "PASS",
            };
            outln!(
                "  {verdict} against {}: {}",
                loaded.sessions[1].id,
                words::comparison(&c.comparison)
            );
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}

/// The demo's closing report: both sessions grouped by code version and
/// path, `after` compared against `before` per phase (warm, concurrency and
/// cold TTFT) and per path — never pooled over paths that behave
/// differently, except the cold probes' labelled pooled summary (a handful
/// a path, too few for a rank test on their own; a cold start is the
/// app's, not a path's) — terminal text returned and the HTML page written,
/// both from the same input, so the page carries the verdicts too.
pub async fn demo_report(store_url: &str, ids: &[String], html: &Path) -> anyhow::Result<String> {
    let store = Store::open_existing(store_url).await?;
    let loaded = load(&store, ids, true).await?;
    let settings = Settings::from_sessions(&loaded.sessions);
    let keys = GroupKey::parse_list("code_version,path")?;
    let analysis = analyse(&loaded, &keys, &settings);
    let mut comparisons = Vec::new();
    if let [before, after] = loaded.sessions.as_slice() {
        let (va, vb) = (&after.labels.code_version, &before.labels.code_version);
        for phase in [PhaseKind::Warm, PhaseKind::Concurrency, PhaseKind::Cold] {
            let Ok(per_path) =
                compare_per_path(&loaded.frame, &after.id, &before.id, Some(phase), &settings)
            else {
                continue;
            };
            for pc in per_path {
                // Name the sides by code version, path and phase: that is
                // what the demo compares.
                let path = match (&pc.path, phase) {
                    (Some(p), _) => p.as_str(),
                    (None, PhaseKind::Cold) => "all paths pooled",
                    (None, _) => continue,
                };
                let mut c = pc.comparison;
                c.a = format!("{va} · {path} · {}", phase.as_str());
                c.b = vb.to_string();
                comparisons.push(c);
            }
        }
    }
    let page = render(Format::Html, &loaded, &analysis, &comparisons)?;
    std::fs::write(html, page).with_context(|| format!("cannot write {}", html.display()))?;
    render(Format::Terminal, &loaded, &analysis, &comparisons)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse() {
        assert_eq!(
            parse_threshold("ttft.p95=3s").unwrap(),
            Threshold {
                metric: "ttft.p95".into(),
                limit: 3000.0
            }
        );
        assert_eq!(parse_threshold("e2e.p50=800ms").unwrap().limit, 800.0);
        assert_eq!(parse_threshold("error_rate=1%").unwrap().limit, 0.01);
        assert_eq!(parse_threshold("error_rate=0.02").unwrap().limit, 0.02);
        assert!(parse_threshold("ttft.p97=3s").is_err());
        assert!(parse_threshold("latency=3s").is_err());
        assert!(parse_threshold("ttft.p95").is_err());
    }
}
