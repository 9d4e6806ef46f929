//! `firsttoken compare`: two sessions (per path) or two groups of a key,
//! before against after.

use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::compare::{Slice, slices};
use firsttoken_analyze::parse;
use firsttoken_analyze::{Comparison, GroupKey, PhaseKind};
use firsttoken_read::compare::{
    before_after, groups_by_key, sessions_per_path, slower_somewhere, versions_differ,
};
use firsttoken_read::{LoadOptions, Selection, analyse, load};
use firsttoken_record::store::Store;
use firsttoken_session::DEFAULT_STORE;

use crate::EXIT_FAILED_REQUESTS;
use crate::render::{Format, render_out};

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
    /// Phase whose TTFT is compared: warm, fresh, cold, direct, concurrency (each level apart),
    /// rate, or all (every app phase and level both have, each apart: phases are never pooled).
    #[arg(long, default_value = "warm")]
    phase: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    format: Format,
}

/// Groups `a` and `b` of `key` in each slice of `phase` (every app slice
/// with rows when `None`), phases and levels apart; the comparisons and
/// whether `a` is slower in any. A slice without rows on either side is
/// left out; with none left, the first slice's error is the answer.
fn groups_each_slice(
    loaded: &firsttoken_read::Loaded,
    key: GroupKey,
    a: &str,
    b: &str,
    phase: Option<PhaseKind>,
) -> anyhow::Result<(Vec<Comparison>, bool)> {
    let mut slices: Vec<Slice> = slices(&loaded.frame)
        .into_iter()
        .filter(|s| phase.is_none_or(|p| s.phase == p))
        .collect();
    if slices.is_empty() {
        slices = phase.map(Slice::phase).into_iter().collect();
    }
    let mut out = Vec::new();
    let mut first_error = None;
    for s in slices {
        match groups_by_key(&loaded.frame, key, a, b, s, &loaded.settings()) {
            Ok(mut c) => {
                c.a = format!("{} · {}", c.a, s.label());
                c.b = format!("{} · {}", c.b, s.label());
                out.push(c);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match (out.is_empty(), first_error) {
        (true, Some(e)) => Err(e.into()),
        (true, None) => anyhow::bail!("no rows to compare"),
        _ => {
            let slower = out.iter().any(Comparison::worse);
            Ok((out, slower))
        }
    }
}

/// Compare two sessions (or two groups); exit 0 unless A is significantly slower (1).
pub async fn compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let phase = parse::phase_or_all(&a.phase, &parse::TTFT_PHASES)?;
    let store = Store::open_existing(&a.store).await?;
    let (loaded, comparisons, slower): (_, Vec<Comparison>, bool) = match &a.by {
        Some(by) => {
            let key: GroupKey = by
                .parse()
                .map_err(|e| anyhow::anyhow!("--by {by:?}: {e}"))?;
            let loaded = load(&store, &Selection::every_session(), LoadOptions::default()).await?;
            let (cs, slower) = groups_each_slice(&loaded, key, &a.a, &a.b, phase)?;
            (loaded, cs, slower)
        }
        None => {
            let selection = Selection::Sessions(vec![a.a.clone(), a.b.clone()]);
            let loaded = load(&store, &selection, LoadOptions::default()).await?;
            let (ida, idb) = (&loaded.sessions[0].id, &loaded.sessions[1].id);
            // Two code versions are named by them (as the demo does),
            // every app slice compared apart; else by session id.
            let cs = if phase.is_none() && versions_differ(&loaded, ida, idb) {
                before_after(&loaded, idb, ida)
            } else {
                sessions_per_path(&loaded.frame, ida, idb, phase, &loaded.settings())?
            };
            let slower = slower_somewhere(&cs);
            (
                loaded,
                cs.into_iter().map(|c| c.comparison).collect(),
                slower,
            )
        }
    };
    // Paths never pool unlabelled; phases, levels and strategies never
    // pool at all (analyze's `headline_keys`).
    let keys = match &a.by {
        Some(by) => vec![by.parse()?, GroupKey::Path],
        None => vec![GroupKey::CodeVersion, GroupKey::Path],
    };
    let analysis = analyse(&loaded, &keys);
    render_out(a.format, &loaded, &analysis, &comparisons, None)?;
    Ok(if slower {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}
