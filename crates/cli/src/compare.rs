//! `firsttoken compare`: two sessions (per path) or two groups of a key,
//! before against after.

use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::parse;
use firsttoken_analyze::{Comparison, GroupKey};
use firsttoken_read::compare::{groups_by_key, sessions_per_path, slower_somewhere};
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
    /// Phase whose TTFT is compared: warm, fresh, cold, direct, concurrency, rate, or all.
    #[arg(long, default_value = "warm")]
    phase: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    format: Format,
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
            let c = groups_by_key(&loaded.frame, key, &a.a, &a.b, phase, &loaded.settings())?;
            let slower = c.worse();
            (loaded, vec![c], slower)
        }
        None => {
            let selection = Selection::Sessions(vec![a.a.clone(), a.b.clone()]);
            let loaded = load(&store, &selection, LoadOptions::default()).await?;
            let (ida, idb) = (&loaded.sessions[0].id, &loaded.sessions[1].id);
            let cs = sessions_per_path(&loaded.frame, ida, idb, phase, &loaded.settings())?;
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
