//! Sample-size planning from stored pilot data (`firsttoken plan`): which
//! rows form each pilot group, how groups are paired for a comparison, what
//! a config's counts support (`--claims`), and the pilot session to run
//! first (`--pilot`: [`PilotRun`]); the simulations themselves are
//! analyze's [`power`] module.
//!
//! Pilot groups follow the one pooling policy ([`crate::pool`]): rows of
//! one phase when a phase is asked for, per path (as the report compares),
//! of one provenance kind.

use std::collections::BTreeMap;

use firsttoken_analyze::group::KeyValue;
use firsttoken_analyze::power::{
    self, ClaimRow, Claims, Effect, Needed, Pace, Pilot, PlanDoc, PlanSettings, PowerRow, ToGo,
    WidthRow, plan_power, plan_width,
};
use firsttoken_analyze::{
    Frame, GroupKey, Metric, Percentile, PhaseKind, Samples, Settings, group_in_phase, settings_for,
};
use firsttoken_plan::config::{Config, PhaseCount, PhasesSection};
use firsttoken_plan::protocol::{Dest, Planned, Protocol, Step};
use firsttoken_record::session::SessionMeta;
use firsttoken_record::store::Store;

use crate::pool::{self, PoolError, in_phase};
use crate::{LoadOptions, ReadError, Selection, load};

/// What the pilot groups are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pilots {
    /// Each group of `key` (every path of the pilot when `None`), planned
    /// against another like it.
    Each(Option<GroupKey>),
    /// Session `a` against session `b`, each its own pilot, path by path.
    Sessions(String, String),
    /// The rows whose `key` is `a` against those whose `key` is `b`, path
    /// by path.
    Values(GroupKey, String, String),
}

/// What to plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ask {
    /// The metric.
    pub metric: Metric,
    /// The quantile compared.
    pub quantile: Percentile,
    /// The phase whose rows are the pilot (`None`: every phase).
    pub phase: Option<PhaseKind>,
    /// The difference to detect, if a power plan is asked for.
    pub effect: Option<Effect>,
    /// The widest interval each percentile may have, as a share of its
    /// value, if a width plan is asked for.
    pub width: Option<f64>,
    /// The power target and simulations.
    pub settings: PlanSettings,
}

impl Default for Ask {
    /// The TTFT median over every phase, with the default power target and
    /// simulations: what `run --plan` asks.
    fn default() -> Ask {
        Ask {
            metric: Metric::Ttft,
            quantile: Percentile::P50,
            phase: None,
            effect: None,
            width: None,
            settings: PlanSettings::default(),
        }
    }
}

/// The pilot `plan --pilot N` runs before planning: N warm requests on
/// each app path of the config, stored as a session of its own tagged
/// [`PILOT_TAG`], then planned from alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PilotRun {
    per_path: u32,
}

/// The label a pilot session carries: `purpose=pilot`.
pub const PILOT_TAG: (&str, &str) = ("purpose", "pilot");

impl PilotRun {
    /// A pilot of `per_path` warm requests a path; none is refused.
    pub fn new(per_path: u32) -> Result<PilotRun, ReadError> {
        if per_path == 0 {
            return Err(ReadError::EmptyPilot);
        }
        Ok(PilotRun { per_path })
    }

    /// Warm requests a path.
    pub fn per_path(self) -> u32 {
        self.per_path
    }

    /// Warm requests in all on the app paths of `config` (a config naming
    /// no path has one).
    pub fn requests(self, config: &Config) -> u32 {
        let paths = u32::try_from(config.app.paths.len().max(1)).unwrap_or(u32::MAX);
        self.per_path.saturating_mul(paths)
    }

    /// `config` as the pilot runs it: its phases replaced by the pilot's
    /// warm requests (the protocol deals them over the paths).
    pub fn config(self, mut config: Config) -> Config {
        config.phases = PhasesSection {
            warm: PhaseCount::from(self.requests(&config)),
            ..PhasesSection::default()
        };
        config
    }

    /// The labels of the pilot session ([`PILOT_TAG`]).
    pub fn tags() -> BTreeMap<String, String> {
        [(PILOT_TAG.0.to_string(), PILOT_TAG.1.to_string())].into()
    }
}

/// One pilot group: its name, its values and its pace.
struct PilotGroup {
    name: String,
    pilot: Pilot,
    pace: Pace,
}

/// A group of rows before it is named: its value of the key, its path,
/// its values and pace.
struct Raw {
    value: KeyValue,
    path: KeyValue,
    samples: Samples,
    pace: Pace,
}

impl Raw {
    /// Named `prefix`, with `, path=…` when the pilot spans several paths.
    fn named(self, prefix: &str, paths: bool) -> PilotGroup {
        let name = match (prefix.is_empty(), paths) {
            (_, false) => prefix.to_string(),
            (true, true) => format!("path={}", self.path),
            (false, true) => format!("{prefix}, path={}", self.path),
        };
        PilotGroup {
            pilot: Pilot::new(name.clone(), &self.samples),
            name,
            pace: self.pace,
        }
    }
}

/// A planned comparison: its name, the compared group (`None`: the
/// baseline against another like it) and the baseline.
type Pairing = (String, Option<PilotGroup>, PilotGroup);

/// The rows of `frame` within `phase`, grouped by `key` and by path, and
/// whether there are several paths. Rows of several provenance kinds are
/// refused: they never pool.
fn groups_by(
    frame: &Frame,
    key: Option<GroupKey>,
    phase: Option<PhaseKind>,
    metric: Metric,
) -> Result<(Vec<Raw>, bool), PoolError> {
    let mut keys: Vec<GroupKey> = key.into_iter().collect();
    if key != Some(GroupKey::Path) {
        keys.push(GroupKey::Path);
    }
    let groups = group_in_phase(frame, &keys, phase);
    pool::one_kind(
        &format!("the pilot{}", in_phase(phase)),
        &groups.iter().collect::<Vec<_>>(),
    )?;
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
) -> Result<Vec<Pairing>, PoolError> {
    let mut out = Vec::new();
    for ra in a {
        if let Some(i) = b.iter().position(|rb| rb.path == ra.path) {
            let ga = ra.named(names.0, paths);
            let gb = b.remove(i).named(names.1, paths);
            out.push((format!("{} vs {}", ga.name, gb.name), Some(ga), gb));
        }
    }
    if out.is_empty() {
        return Err(PoolError::NoCommonPath {
            a: names.0.to_string(),
            b: names.1.to_string(),
        });
    }
    Ok(out)
}

/// The frame and sessions of `ids` (every session: none).
async fn frame_of(store: &Store, ids: &[String]) -> Result<crate::Loaded, ReadError> {
    load(
        store,
        &Selection::Sessions(ids.to_vec()),
        LoadOptions::default(),
    )
    .await
}

/// The pairings `pilots` asks for, from the sessions `selected` of `store`.
async fn pairings(
    store: &Store,
    selected: &[String],
    pilots: &Pilots,
    ask: &Ask,
) -> Result<(Vec<Pairing>, Vec<SessionMeta>), ReadError> {
    let none = |what: &str| PoolError::Empty {
        what: what.to_string(),
        phase: ask.phase,
    };
    match pilots {
        Pilots::Sessions(a, b) => {
            let la = frame_of(store, std::slice::from_ref(a)).await?;
            let lb = frame_of(store, std::slice::from_ref(b)).await?;
            let (ma, mb) = (&la.sessions[0], &lb.sessions[0]);
            if ma.provenance != mb.provenance {
                return Err(PoolError::KindsDiffer {
                    a: ma.id.clone(),
                    a_kind: ma.provenance,
                    b: mb.id.clone(),
                    b_kind: mb.provenance,
                }
                .into());
            }
            let (ra, pa) = groups_by(&la.frame, None, ask.phase, ask.metric)?;
            let (rb, pb) = groups_by(&lb.frame, None, ask.phase, ask.metric)?;
            if ra.is_empty() || rb.is_empty() {
                let empty = if ra.is_empty() { &ma.id } else { &mb.id };
                return Err(none(empty).into());
            }
            let paired = pair_by_path(ra, rb, (&ma.id, &mb.id), pa || pb)?;
            Ok((paired, la.sessions.into_iter().chain(lb.sessions).collect()))
        }
        Pilots::Values(key, a, b) => {
            let loaded = frame_of(store, selected).await?;
            let (raws, paths) = groups_by(&loaded.frame, Some(*key), ask.phase, ask.metric)?;
            let (ra, rest): (Vec<Raw>, Vec<Raw>) =
                raws.into_iter().partition(|r| r.value.to_string() == *a);
            let rb: Vec<Raw> = rest
                .into_iter()
                .filter(|r| r.value.to_string() == *b)
                .collect();
            for (v, r) in [(a, &ra), (b, &rb)] {
                if r.is_empty() {
                    return Err(PoolError::NoRows {
                        what: format!("{key}={v}{}", in_phase(ask.phase)),
                    }
                    .into());
                }
            }
            let names = (format!("{key}={a}"), format!("{key}={b}"));
            let paired = pair_by_path(ra, rb, (&names.0, &names.1), paths)?;
            Ok((paired, loaded.sessions))
        }
        Pilots::Each(key) => {
            let loaded = frame_of(store, selected).await?;
            let (raws, paths) = groups_by(&loaded.frame, *key, ask.phase, ask.metric)?;
            if raws.is_empty() {
                return Err(none("the pilot").into());
            }
            let paired = raws
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
            Ok((paired, loaded.sessions))
        }
    }
}

fn reached(n: &Needed) -> Option<usize> {
    match n {
        Needed::Reached { n, .. } => Some(*n),
        _ => None,
    }
}

/// The plan `ask` and `pilots` call for, from the sessions `selected` of
/// `store` (every session: none).
pub async fn plan(
    store: &Store,
    selected: &[String],
    pilots: &Pilots,
    ask: &Ask,
) -> Result<PlanDoc, ReadError> {
    let (pairings, sessions) = pairings(store, selected, pilots, ask).await?;
    let settings = settings_for(&sessions);
    let mut power_rows = Vec::new();
    let mut width_rows = Vec::new();
    for (groups, compared, baseline) in &pairings {
        if let Some(effect) = ask.effect {
            let p = plan_power(
                &baseline.pilot,
                compared.as_ref().map(|g| &g.pilot),
                ask.quantile,
                effect,
                &settings,
                &ask.settings,
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
        if let Some(w) = ask.width {
            for g in compared.iter().chain(std::iter::once(baseline)) {
                for wp in plan_width(&g.pilot, w, &settings, &ask.settings)? {
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
    Ok(doc(
        ask, ask.phase, &sessions, &settings, power_rows, width_rows, None,
    ))
}

fn doc(
    ask: &Ask,
    phase: Option<PhaseKind>,
    sessions: &[SessionMeta],
    settings: &Settings,
    power: Vec<PowerRow>,
    width: Vec<WidthRow>,
    claims: Option<Claims>,
) -> PlanDoc {
    PlanDoc {
        metric: ask.metric,
        phase,
        sessions: sessions.iter().map(|s| s.id.clone()).collect(),
        target_power: ask.settings.power(),
        level: settings.level(),
        alpha: settings.alpha(),
        noise_threshold: settings.noise_threshold(),
        simulations: ask.settings.simulations(),
        power,
        width,
        claims,
    }
}

/// A phase, destination and concurrency level of planned requests.
type Where = (PhaseKind, Dest, Option<u32>);

/// Planned requests per (phase, destination, concurrency level) of a
/// protocol, first seen first.
pub fn planned_counts(protocol: &Protocol) -> Vec<(Where, usize)> {
    let mut counts: Vec<(Where, usize)> = Vec::new();
    let mut add = |p: &Planned, n: usize| {
        let k = (p.phase, p.dest, p.concurrency);
        match counts.iter_mut().find(|(key, _)| *key == k) {
            Some((_, c)) => *c += n,
            None => counts.push((k, n)),
        }
    };
    for step in &protocol.steps {
        match step {
            Step::One(p) | Step::AfterIdle(_, p) => add(p, 1),
            Step::Burst(v) => v.iter().for_each(|p| add(p, 1)),
            Step::Arrivals(v) => v.iter().for_each(|(_, p)| add(p, 1)),
            Step::Closed { template, .. } => add(template, step.len()),
            Step::Conversations(v) => v.iter().flatten().for_each(|p| add(p, 1)),
        }
    }
    counts
}

/// A pilot of one phase and path, from the store's rows.
struct PhasePilot {
    phase: PhaseKind,
    path: String,
    pilot: Pilot,
    pace: Pace,
}

/// [`claims`] with the pilot rows of the store at `store_url` (a SQLite
/// file or a postgres:// URL) when it has any: a store that does not exist
/// yet (a first run) or cannot be opened plans without a pilot.
pub async fn claims_at(
    store_url: &str,
    pilot_sessions: &[String],
    config: (&Config, &str),
    protocol: (&Protocol, u64),
    ask: &Ask,
) -> Result<PlanDoc, ReadError> {
    let store = Store::open_existing(store_url).await.ok();
    claims(store.as_ref(), pilot_sessions, config, protocol, ask).await
}

/// What the counts of a protocol support, per phase and destination
/// (`--claims`), with the pilot rows and stored costs of the sessions
/// `pilot_sessions` of `store` (every session: none) when there are any.
/// `config` names the app's paths; `seed` seeds the simulations when the
/// store has no pilot.
pub async fn claims(
    store: Option<&Store>,
    pilot_sessions: &[String],
    (config, config_name): (&Config, &str),
    (protocol, seed): (&Protocol, u64),
    ask: &Ask,
) -> Result<PlanDoc, ReadError> {
    let path_name = |d: Dest| match d {
        Dest::App(i) => config
            .app
            .paths
            .get(i)
            .map_or_else(|| "-".to_string(), |p| p.name.clone()),
        Dest::Direct(_) => firsttoken_record::Destination::DIRECT_PATH.to_string(),
        Dest::Ping => firsttoken_record::Destination::PING_PATH.to_string(),
    };
    let mut pilots: Vec<PhasePilot> = Vec::new();
    let mut sessions = Vec::new();
    // Stored cost per (phase, path): the sum and the count.
    let mut costs: Vec<((PhaseKind, String), f64, u64)> = Vec::new();
    // A store without sessions (or none to read) plans without a pilot.
    let loaded = match store {
        Some(s) => frame_of(s, pilot_sessions).await.ok(),
        None => None,
    };
    if let (Some(store), Some(loaded)) = (store, loaded) {
        for m in &loaded.sessions {
            for c in store.mean_costs(&m.id).await? {
                let key = (c.phase, c.path.unwrap_or_else(|| "-".to_string()));
                let sum = c.mean_usd * c.n as f64;
                match costs.iter_mut().find(|(k, _, _)| *k == key) {
                    Some((_, s, n)) => {
                        *s += sum;
                        *n += c.n;
                    }
                    None => costs.push((key, sum, c.n)),
                }
            }
        }
        for phase in PhaseKind::ALL {
            let groups = group_in_phase(&loaded.frame, &[GroupKey::Path], Some(phase));
            let mut by_path: Vec<(String, Vec<PhasePilot>)> = Vec::new();
            for g in groups {
                let path = pool::value_text(&g, GroupKey::Path);
                let (samples, pace) = power::pilot_of_rows(&loaded.frame, &g.rows, ask.metric);
                let p = PhasePilot {
                    phase,
                    path: path.clone(),
                    pilot: Pilot::new("pilot", &samples),
                    pace,
                };
                match by_path.iter_mut().find(|(q, _)| *q == path) {
                    Some((_, v)) => v.push(p),
                    None => by_path.push((path, vec![p])),
                }
            }
            // Of several provenance kinds, the best-supported one: never a
            // pool of them.
            pilots.extend(
                by_path
                    .into_iter()
                    .filter_map(|(_, kinds)| pool::largest(kinds, |p| p.pilot.len())),
            );
        }
        sessions = loaded.sessions;
    }
    let settings = if sessions.is_empty() {
        Settings::new(seed)
    } else {
        settings_for(&sessions)
    };
    let mut rows = Vec::new();
    for ((phase, dest, level), n) in planned_counts(protocol) {
        let path = path_name(dest);
        let pilot = pilots
            .iter()
            .find(|p| p.phase == phase && p.path == path && !p.pilot.is_empty());
        let detectable = match pilot {
            Some(p) => {
                match power::detectable_at(
                    &p.pilot,
                    None,
                    ask.quantile,
                    n,
                    n,
                    &settings,
                    &ask.settings,
                ) {
                    Ok(d) => Some(d),
                    // A pilot too small to plan from says nothing.
                    Err(power::PlanError::PilotTooSmall { .. }) => None,
                    Err(e) => return Err(e.into()),
                }
            }
            None => None,
        };
        let cost_usd = costs
            .iter()
            .find(|((p, q), _, _)| *p == phase && *q == path)
            .map(|(_, sum, k)| sum / *k as f64 * n as f64);
        rows.push(ClaimRow {
            pilot_values: pilot.map_or(0, |p| p.pilot.len()),
            pilot_needed: power::MIN_PILOT.max(ask.quantile.min_n()),
            phase,
            destination: match level {
                Some(k) => format!("{path} @ {k} concurrent"),
                None => path,
            },
            support: power::support(n, &settings),
            detectable,
            time_ms: pilot.and_then(|p| p.pace.time_ms(n)),
            cost_usd,
        });
    }
    let claims = Claims {
        config: config_name.to_string(),
        quantile: ask.quantile,
        fixed_wait_ms: protocol.min_duration().as_secs_f64() * 1000.0,
        rows,
    };
    Ok(doc(
        ask,
        None,
        &sessions,
        &settings,
        Vec::new(),
        Vec::new(),
        Some(claims),
    ))
}

#[cfg(test)]
#[path = "pilot_tests.rs"]
mod tests;
