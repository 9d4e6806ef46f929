//! `firsttoken plan`: how many requests a comparison needs to detect a
//! difference, what the stored counts detect now, and how many values make
//! each percentile appear with a narrow interval — by simulation on pilot
//! data from the store (analyze's `power` module; words in report's
//! `words::plan`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use firsttoken_analyze::group::KeyValue;
use firsttoken_analyze::power::{
    self, Effect, Pace, Pilot, PlanSettings, ToGo, plan_power, plan_width,
};
use firsttoken_analyze::{
    Frame, GroupKey, Metric, Percentile, PhaseKind, Samples, Settings, group,
};
use firsttoken_plan::config::{Config, PhaseCount, PhasesSection};
use firsttoken_plan::protocol::{Dest, Planned, Step};
use firsttoken_record::session::SessionMeta;
use firsttoken_record::store::Store;
use firsttoken_report::plan::{ClaimRow, Claims, PlanDoc, PowerRow, WidthRow, json, markdown};
use firsttoken_session::{Overrides, SessionSpec};

use crate::report::load;
use crate::session::{DEFAULT_STORE, run_spec};

/// Output formats of `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A Markdown table, to read or to paste into an issue.
    Table,
    /// JSON: the numbers, and the table's text beside them.
    Json,
}

/// `firsttoken plan`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  firsttoken plan --detect 100ms             the stored warm TTFT, per path, as the pilot
  firsttoken plan --detect 10% --quantile p95 --by code_version
  firsttoken plan --detect 150ms --between NEW_ID OLD_ID
  firsttoken plan --detect 100ms --by code_version --between v2 v1
  firsttoken plan --width 10%                p50/p90/p95/p99 intervals at most 10 % wide
  firsttoken plan --pilot 20 --detect 100ms  run a pilot of 20 per path first
  firsttoken plan --claims                   what firsttoken.toml's counts support

How: power is the share of simulated experiments, drawn from the pilot's own distribution,
in which the report's rule would state the difference (for the median: `compare`'s verdict;
for p95: the interval of the p95 difference excluding 0). See docs/METHODOLOGY.md.
EXIT STATUS: 0 plan printed; 2 usage error, or a pilot group with too few values.")]
pub struct PlanArgs {
    /// Result store: a SQLite file or a postgres:// URL.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
    /// Pilot session id or unique prefix (repeatable); default: every session in the store.
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
    /// Run a quick pilot first: N warm requests per app path of the config's app, stored in
    /// --store (tagged purpose=pilot), then plan from that session alone.
    #[arg(long, value_name = "N", conflicts_with_all = ["sessions", "between"])]
    pilot: Option<u32>,
    /// Say what the config's counts support, per phase and destination, before running it:
    /// percentiles shown, whether a comparison can pass the rank test, the difference each
    /// count detects (from stored pilot rows of the same phase and path) and the time.
    #[arg(long, conflicts_with_all = ["pilot", "between", "by", "width"])]
    claims: bool,
    /// Session config for --pilot and --claims (write one with `firsttoken init`).
    #[arg(long, short, default_value = "firsttoken.toml")]
    config: PathBuf,
    /// The difference to detect: `100ms`, `1.5s`, or `10%` of the baseline's quantile
    /// (for tokens_per_s: a number of tokens/s).
    #[arg(long, value_name = "DIFF", required_unless_present_any = ["width", "claims"])]
    detect: Option<String>,
    /// Metric: ttft, ttfb, e2e or tokens_per_s (any stored metric).
    #[arg(long, default_value = "ttft")]
    metric: String,
    /// Quantile compared: p50 (the comparison's verdict) or p95 (its interval).
    #[arg(long, default_value = "p50", value_name = "pNN")]
    quantile: String,
    /// Phase whose rows are the pilot: warm, fresh, cold, direct, concurrency, rate or all.
    #[arg(long, default_value = "warm")]
    phase: String,
    /// Plan for every group of this key (network, code_version, vantage, day, path, strategy,
    /// concurrency, provider); with --between, A and B are values of it.
    #[arg(long, value_name = "KEY")]
    by: Option<String>,
    /// Plan the comparison of A against the baseline B, each its own pilot: two sessions,
    /// or two values of --by KEY.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    between: Option<Vec<String>>,
    /// Power to aim for: 0.8 or 80%.
    #[arg(long, default_value = "0.8")]
    power: String,
    /// Also plan each percentile the report shows (p50, p90, p95, p99) so its interval is at
    /// most this wide, as a share of its value: 10%.
    #[arg(long, value_name = "SHARE")]
    width: Option<String>,
    /// Simulated experiments per estimate (more: steadier figures, slower).
    #[arg(long, default_value_t = 400)]
    simulations: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    format: PlanFormat,
}

/// A share: `10%` or `0.1`.
fn share(flag: &str, s: &str) -> anyhow::Result<f64> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .with_context(|| format!("{flag} {s:?}: expected a share such as 10% or 0.1"))?;
    if !(v.is_finite() && v > 0.0) {
        bail!("{flag} {s:?}: must be positive");
    }
    Ok(v)
}

/// `100ms`, `1.5s`, `10%`, or a bare number in the metric's unit.
fn effect(s: &str, metric: Metric) -> anyhow::Result<Effect> {
    let t = s.trim();
    if t.ends_with('%') {
        return Ok(Effect::Relative(share("--detect", t)?));
    }
    let (num, scale) = if metric == Metric::TokensPerS {
        (t.strip_suffix("tok/s").unwrap_or(t), 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().with_context(|| {
        format!("--detect {s:?}: expected a difference such as 100ms, 1.5s or 10%")
    })?;
    if !(v.is_finite() && v > 0.0) {
        bail!("--detect {s:?}: must be positive");
    }
    Ok(Effect::Absolute(v * scale))
}

/// `p50`, `p95`, `median`.
fn quantile(s: &str) -> anyhow::Result<Percentile> {
    let t = s.trim().to_ascii_lowercase();
    let p = if t == "median" {
        Some(50.0)
    } else {
        t.strip_prefix('p').and_then(|n| n.parse::<f64>().ok())
    };
    match p {
        Some(p) if (1.0..100.0).contains(&p) => Ok(Percentile::new(p)?),
        _ => bail!("--quantile {s:?}: expected p50, p95 or another pNN below p100"),
    }
}

fn phase(s: &str) -> anyhow::Result<Option<PhaseKind>> {
    if s == "all" {
        return Ok(None);
    }
    match s.parse::<PhaseKind>() {
        Ok(p) => Ok(Some(p)),
        _ => bail!(
            "unknown phase {s:?}: use warm, fresh, cold, direct, concurrency, rate, ping or all"
        ),
    }
}

/// One pilot group: its name, its values and its pace.
struct Group {
    name: String,
    pilot: Pilot,
    pace: Pace,
}

/// A group of rows before it is named: its value of `--by`, its path, its
/// values and pace.
struct Raw {
    value: KeyValue,
    path: KeyValue,
    samples: Samples,
    pace: Pace,
}

impl Raw {
    /// Named `prefix`, with `, path=…` when the pilot spans several paths.
    fn named(self, prefix: &str, paths: bool) -> Group {
        let name = match (prefix.is_empty(), paths) {
            (_, false) => prefix.to_string(),
            (true, true) => format!("path={}", self.path),
            (false, true) => format!("{prefix}, path={}", self.path),
        };
        Group {
            pilot: Pilot::new(name.clone(), &self.samples),
            name,
            pace: self.pace,
        }
    }
}

/// " in the warm phase", or nothing.
fn in_phase(phase: Option<PhaseKind>) -> String {
    phase
        .map(|p| format!(" in the {} phase", p.as_str()))
        .unwrap_or_default()
}

/// The rows of `frame` within `phase`, grouped by `key` and by path (as the
/// report compares: per path, never pooled), and whether there are several
/// paths. Rows of several provenance kinds are refused: they never pool.
fn groups_by(
    frame: &Frame,
    key: Option<GroupKey>,
    phase: Option<PhaseKind>,
    metric: Metric,
) -> anyhow::Result<(Vec<Raw>, bool)> {
    let mut keys: Vec<GroupKey> = key.into_iter().collect();
    if key != Some(GroupKey::Path) {
        keys.push(GroupKey::Path);
    }
    if phase.is_some() {
        keys.push(GroupKey::Phase);
    }
    let groups: Vec<_> = group(frame, &keys)
        .into_iter()
        .filter(|g| {
            phase.is_none_or(|p| {
                g.label
                    .get(GroupKey::Phase)
                    .is_some_and(|v| v.to_string() == p.as_str())
            })
        })
        .collect();
    let mut kinds: Vec<&str> = groups.iter().map(|g| g.provenance.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.len() > 1 {
        bail!(
            "the pilot has rows of several provenance kinds ({}){}; they are never pooled — select sessions of one kind with --session",
            kinds.join(", "),
            in_phase(phase)
        );
    }
    let raws: Vec<Raw> = groups
        .into_iter()
        .map(|g| {
            let (samples, pace) = power::pilot_of_rows(frame, &g.rows, metric);
            let get = |k: GroupKey| g.label.get(k).cloned().unwrap_or(KeyValue::Missing);
            Raw {
                value: key.map_or(KeyValue::Missing, get),
                path: get(GroupKey::Path),
                samples,
                pace,
            }
        })
        .collect();
    let mut paths: Vec<String> = raws.iter().map(|r| r.path.to_string()).collect();
    paths.sort();
    paths.dedup();
    Ok((raws, key != Some(GroupKey::Path) && paths.len() > 1))
}

/// Pairs `a` with `b` path by path: (compared, baseline), paths `a` has first.
fn pair_by_path(
    a: Vec<Raw>,
    mut b: Vec<Raw>,
    names: (&str, &str),
    paths: bool,
) -> anyhow::Result<Vec<(String, Option<Group>, Group)>> {
    let mut out = Vec::new();
    for ra in a {
        if let Some(i) = b.iter().position(|rb| rb.path == ra.path) {
            let ga = ra.named(names.0, paths);
            let gb = b.remove(i).named(names.1, paths);
            out.push((format!("{} vs {}", ga.name, gb.name), Some(ga), gb));
        }
    }
    if out.is_empty() {
        bail!("{} and {} have no path in common", names.0, names.1);
    }
    Ok(out)
}

/// `firsttoken plan`.
pub async fn plan(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let metric: Metric = a.metric.parse()?;
    let q = quantile(&a.quantile)?;
    let effect = a.detect.as_deref().map(|d| effect(d, metric)).transpose()?;
    let width = a
        .width
        .as_deref()
        .map(|w| share("--width", w))
        .transpose()?;
    let target = share("--power", &a.power)?;
    let plan_settings = PlanSettings::default()
        .with_power(target)?
        .with_simulations(a.simulations)?;
    let phase = phase(&a.phase)?;
    let key: Option<GroupKey> =
        a.by.as_deref()
            .map(|k| k.parse().map_err(|e| anyhow::anyhow!("--by {k:?}: {e}")))
            .transpose()?;
    if a.claims {
        let cfg = Config::load(&a.config).map_err(|e| anyhow::anyhow!("{e}"))?;
        let spec = SessionSpec::new(cfg, Overrides::default())
            .with_context(|| format!("{}", a.config.display()))?;
        let name = a.config.display().to_string();
        let doc = claims(
            &spec,
            &name,
            &a.store,
            &a.sessions,
            metric,
            q,
            &plan_settings,
        )
        .await?;
        match a.format {
            PlanFormat::Table => out!("{}", markdown(&doc)),
            PlanFormat::Json => outln!("{}", serde_json::to_string_pretty(&json(&doc))?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (store, selected) = match a.pilot {
        Some(n) => {
            let store = Store::open(&a.store).await?;
            let id = run_pilot(&a.config, n, &a.store, &store).await?;
            (store, vec![id])
        }
        None => (Store::open_existing(&a.store).await?, a.sessions.clone()),
    };

    // (groups, compared, baseline): `compared` None plans a comparison of
    // the baseline with another group like it.
    let comparisons: Vec<(String, Option<Group>, Group)>;
    let sessions: Vec<SessionMeta>;
    let none = |what: &str| anyhow::anyhow!("{what}: no rows{}", in_phase(phase));
    match (&a.between, key) {
        (Some(ab), None) => {
            let la = load(&store, std::slice::from_ref(&ab[0]), false).await?;
            let lb = load(&store, std::slice::from_ref(&ab[1]), false).await?;
            let (ia, ib) = (la.sessions[0].id.clone(), lb.sessions[0].id.clone());
            let (pa, pb) = (la.sessions[0].provenance, lb.sessions[0].provenance);
            if pa != pb {
                bail!(
                    "cannot plan {ia} ({}) against {ib} ({}): provenance kinds are never compared",
                    pa.as_str(),
                    pb.as_str()
                );
            }
            let (ra, pa) = groups_by(&la.frame, None, phase, metric)?;
            let (rb, pb) = groups_by(&lb.frame, None, phase, metric)?;
            if ra.is_empty() || rb.is_empty() {
                return Err(none(if ra.is_empty() { &ia } else { &ib }));
            }
            comparisons = pair_by_path(ra, rb, (&ia, &ib), pa || pb)?;
            sessions = la.sessions.into_iter().chain(lb.sessions).collect();
        }
        (Some(ab), Some(k)) => {
            let loaded = load(&store, &selected, false).await?;
            let (raws, paths) = groups_by(&loaded.frame, Some(k), phase, metric)?;
            let (ra, rest): (Vec<Raw>, Vec<Raw>) =
                raws.into_iter().partition(|r| r.value.to_string() == ab[0]);
            let rb: Vec<Raw> = rest
                .into_iter()
                .filter(|r| r.value.to_string() == ab[1])
                .collect();
            for (v, r) in [(&ab[0], &ra), (&ab[1], &rb)] {
                if r.is_empty() {
                    bail!("no rows with {k}={v}{}", in_phase(phase));
                }
            }
            let names = (format!("{k}={}", ab[0]), format!("{k}={}", ab[1]));
            comparisons = pair_by_path(ra, rb, (&names.0, &names.1), paths)?;
            sessions = loaded.sessions;
        }
        (None, key) => {
            let loaded = load(&store, &selected, false).await?;
            let (raws, paths) = groups_by(&loaded.frame, key, phase, metric)?;
            if raws.is_empty() {
                return Err(none("the pilot"));
            }
            comparisons = raws
                .into_iter()
                .map(|r| {
                    let prefix = match key {
                        Some(k) => format!("{k}={}", r.value),
                        None if paths => String::new(),
                        None => "pilot".to_string(),
                    };
                    let g = r.named(&prefix, paths);
                    (format!("{} vs another like it", g.name), None, g)
                })
                .collect();
            sessions = loaded.sessions;
        }
    }

    let settings = Settings::from_sessions(&sessions);
    let mut power_rows = Vec::new();
    let mut width_rows = Vec::new();
    for (groups, compared, baseline) in &comparisons {
        if let Some(effect) = effect {
            let p = plan_power(
                &baseline.pilot,
                compared.as_ref().map(|g| &g.pilot),
                q,
                effect,
                &settings,
                &plan_settings,
            )?;
            let to_go = reached(&p.needed).map(|n| {
                let sides = match compared {
                    Some(c) => vec![
                        (c.pilot.len(), c.pace),
                        (baseline.pilot.len(), baseline.pace),
                    ],
                    // The pilot serves as one side; the other is measured in full.
                    None => vec![(baseline.pilot.len(), baseline.pace), (0, baseline.pace)],
                };
                power::to_go(n, &sides)
            });
            power_rows.push(PowerRow {
                groups: groups.clone(),
                plan: p,
                to_go,
            });
        }
        if let Some(w) = width {
            for g in compared.iter().chain(std::iter::once(baseline)) {
                for wp in plan_width(&g.pilot, w, &settings, &plan_settings)? {
                    let to_go: Option<ToGo> =
                        reached(&wp.needed).map(|n| power::to_go(n, &[(g.pilot.len(), g.pace)]));
                    width_rows.push(WidthRow {
                        group: g.name.clone(),
                        plan: wp,
                        to_go,
                    });
                }
            }
        }
    }
    let doc = PlanDoc {
        metric,
        phase: phase.map(|p| p.as_str().to_string()),
        sessions: sessions.iter().map(|s| s.id.clone()).collect(),
        target_power: plan_settings.power(),
        level: settings.level(),
        alpha: settings.alpha(),
        noise_threshold: settings.noise_threshold(),
        simulations: plan_settings.simulations(),
        power: power_rows,
        width: width_rows,
        claims: None,
    };
    match a.format {
        PlanFormat::Table => out!("{}", markdown(&doc)),
        PlanFormat::Json => outln!("{}", serde_json::to_string_pretty(&json(&doc))?),
    }
    Ok(ExitCode::SUCCESS)
}

/// A phase, destination and concurrency level of planned requests.
type Where = (PhaseKind, Dest, Option<u32>);

/// `--claims`: what the config's counts support, per phase and
/// destination, with the pilot rows of the store (when there are any).
///
/// Takes the validated spec, so that `run` can ask the same question of
/// the session it is about to start (its overrides and preset applied):
/// `firsttoken run --plan` is this call and [`markdown`].
pub(crate) async fn claims(
    spec: &SessionSpec,
    config_name: &str,
    store_url: &str,
    pilot_sessions: &[String],
    metric: Metric,
    q: Percentile,
    plan_settings: &PlanSettings,
) -> anyhow::Result<PlanDoc> {
    // Planned requests per (phase, destination, concurrency), first seen first.
    let mut counts: Vec<(Where, usize)> = Vec::new();
    let mut add = |p: &Planned, n: usize| {
        let k = (p.phase, p.dest, p.concurrency);
        match counts.iter_mut().find(|(key, _)| *key == k) {
            Some((_, c)) => *c += n,
            None => counts.push((k, n)),
        }
    };
    for step in &spec.protocol.steps {
        match step {
            Step::One(p) | Step::AfterIdle(_, p) => add(p, 1),
            Step::Burst(v) => v.iter().for_each(|p| add(p, 1)),
            Step::Arrivals(v) => v.iter().for_each(|(_, p)| add(p, 1)),
            Step::Closed { template, .. } => add(template, step.len()),
        }
    }
    let path_name = |d: Dest| match d {
        Dest::App(i) => spec
            .config
            .app
            .paths
            .get(i)
            .map_or_else(|| "-".to_string(), |p| p.name.clone()),
        Dest::Direct(_) => "direct".to_string(),
        Dest::Ping => "ping".to_string(),
    };
    // Pilot rows per (phase, path), when the store has any.
    let mut pilots: Vec<(String, String, Pilot, Pace)> = Vec::new();
    let mut sessions = Vec::new();
    // Mean stored cost per request, per (phase, path), of rows with one.
    let mut costs: Vec<((String, String), f64, usize)> = Vec::new();
    if let Ok(store) = Store::open_existing(store_url).await
        && let Ok(loaded) = load(&store, pilot_sessions, true).await
    {
        for r in &loaded.rows {
            let Some(c) = r.sample.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) else {
                continue;
            };
            let key = (
                r.phase.as_str().to_string(),
                r.dest.path_column().unwrap_or("-").to_string(),
            );
            match costs.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, sum, n)) => {
                    *sum += c;
                    *n += 1;
                }
                None => costs.push((key, c, 1)),
            }
        }
        for g in group(&loaded.frame, &[GroupKey::Phase, GroupKey::Path]) {
            let get = |k: GroupKey| g.label.get(k).map(ToString::to_string).unwrap_or_default();
            let (samples, pace) = power::pilot_of_rows(&loaded.frame, &g.rows, metric);
            let (ph, path) = (get(GroupKey::Phase), get(GroupKey::Path));
            // Of several provenance kinds, the one with the most values.
            match pilots
                .iter()
                .position(|(p, q, _, _)| *p == ph && *q == path)
            {
                Some(i) if pilots[i].2.len() >= samples.len() => {}
                Some(i) => pilots[i] = (ph, path, Pilot::new("pilot", &samples), pace),
                None => pilots.push((ph, path, Pilot::new("pilot", &samples), pace)),
            }
        }
        sessions = loaded.sessions;
    }
    let settings = if sessions.is_empty() {
        Settings::new(spec.seed)
    } else {
        Settings::from_sessions(&sessions)
    };
    let mut rows = Vec::new();
    for ((phase, dest, level), n) in counts {
        let path = path_name(dest);
        let pilot = pilots
            .iter()
            .find(|(p, q, pilot, _)| p == phase.as_str() && *q == path && !pilot.is_empty());
        let detectable = match pilot {
            Some((_, _, pilot, _)) => {
                match power::detectable_at(pilot, None, q, n, n, &settings, plan_settings) {
                    Ok(d) => Some(d),
                    // A pilot too small to plan from says nothing.
                    Err(power::PlanError::PilotTooSmall { .. }) => None,
                    Err(e) => return Err(e.into()),
                }
            }
            None => None,
        };
        let time_ms = pilot.and_then(|(_, _, _, pace)| pace.time_ms(n));
        let cost_usd = costs
            .iter()
            .find(|((p, q), _, _)| p == phase.as_str() && *q == path)
            .map(|(_, sum, k)| sum / *k as f64 * n as f64);
        rows.push(ClaimRow {
            pilot_values: pilot.map_or(0, |(_, _, p, _)| p.len()),
            pilot_needed: power::MIN_PILOT.max(q.min_n()),
            phase: phase.as_str().to_string(),
            destination: match level {
                Some(k) => format!("{path} @ {k} concurrent"),
                None => path,
            },
            support: power::support(n, &settings),
            detectable,
            time_ms,
            cost_usd,
        });
    }
    Ok(PlanDoc {
        metric,
        phase: None,
        sessions: sessions.iter().map(|s| s.id.clone()).collect(),
        target_power: plan_settings.power(),
        level: settings.level(),
        alpha: settings.alpha(),
        noise_threshold: settings.noise_threshold(),
        simulations: plan_settings.simulations(),
        power: Vec::new(),
        width: Vec::new(),
        claims: Some(Claims {
            config: config_name.to_string(),
            quantile: q,
            fixed_wait_ms: spec.protocol.min_duration().as_secs_f64() * 1000.0,
            rows,
        }),
    })
}

/// Run `n` warm requests per app path of the config at `config` as a
/// session in `store` (the flag's `store_url`); returns its id.
async fn run_pilot(
    config: &std::path::Path,
    n: u32,
    store_url: &str,
    store: &Store,
) -> anyhow::Result<String> {
    if n == 0 {
        bail!("--pilot 0: a pilot needs requests");
    }
    let mut cfg = Config::load(config).map_err(|e| {
        let hint = if config.exists() {
            ""
        } else {
            " (write a commented config with `firsttoken init`)"
        };
        anyhow::anyhow!("{e}{hint}")
    })?;
    let paths = cfg.app.paths.len().max(1) as u32;
    cfg.phases = PhasesSection {
        warm: PhaseCount::from(n.saturating_mul(paths)),
        ..PhasesSection::default()
    };
    let overrides = Overrides {
        store: Some(store_url.to_string()),
        tags: [("purpose".to_string(), "pilot".to_string())].into(),
        ..Overrides::default()
    };
    let spec = SessionSpec::new(cfg, overrides).with_context(|| format!("{}", config.display()))?;
    eprintln!(
        "pilot: {} warm requests ({n} per app path) against {}",
        n * paths,
        spec.config.app.base_url
    );
    let outcome = run_spec(&spec, store, true).await?;
    eprintln!(
        "pilot: session {} stored, {} of {} requests failed",
        outcome.meta.id, outcome.failed, outcome.done
    );
    Ok(outcome.meta.id)
}

fn reached(n: &power::Needed) -> Option<usize> {
    match n {
        power::Needed::Reached { n, .. } => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_shares_and_quantiles_parse() {
        assert_eq!(
            effect("100ms", Metric::Ttft).unwrap(),
            Effect::Absolute(100.0)
        );
        assert_eq!(
            effect("1.5s", Metric::Ttft).unwrap(),
            Effect::Absolute(1500.0)
        );
        assert_eq!(effect("80", Metric::Ttft).unwrap(), Effect::Absolute(80.0));
        assert_eq!(effect("10%", Metric::Ttft).unwrap(), Effect::Relative(0.1));
        assert_eq!(
            effect("5 tok/s", Metric::TokensPerS).unwrap(),
            Effect::Absolute(5.0)
        );
        assert!(effect("-5ms", Metric::Ttft).is_err());
        assert!(effect("fast", Metric::Ttft).is_err());
        assert_eq!(share("--power", "80%").unwrap(), 0.8);
        assert_eq!(share("--power", "0.9").unwrap(), 0.9);
        assert!(share("--width", "0").is_err());
        assert_eq!(quantile("p95").unwrap(), Percentile::P95);
        assert_eq!(quantile("median").unwrap(), Percentile::P50);
        assert!(quantile("p100").is_err());
        assert!(quantile("95").is_err());
    }
}
