//! `firsttoken report`: a selection of stored sessions, or a run across
//! agents, analysed and rendered (terminal, Markdown, JSON or HTML).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::GroupKey;
use firsttoken_read::{LoadOptions, Selection, analyse, load};
use firsttoken_record::store::Store;

use crate::render::{Format, render_out};

/// `firsttoken report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result store: a SQLite file or a postgres:// URL (default: the config's session.store,
    /// else firsttoken.db).
    #[arg(long, env = "FIRSTTOKEN_STORE")]
    store: Option<String>,
    /// Session config whose [session] store is read when --store is not given (default:
    /// ./firsttoken.toml when it exists).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Session id or unique prefix (repeatable); default: every session in the store.
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
    /// A run across agents (`run --run-id`): the raw rows of every agent
    /// pooled, each planned request counted once; group by `vantage` or
    /// `network` for the per-agent breakdown.
    #[arg(long = "run", value_name = "ID", conflicts_with = "sessions")]
    run: Option<String>,
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
    let selection = match &a.run {
        Some(id) => Selection::Run(id.clone()),
        None => Selection::Sessions(a.sessions.clone()),
    };
    let options = LoadOptions {
        rows: a.format == Format::Html,
        ..LoadOptions::default()
    };
    let url = crate::store_arg::store_url(
        a.store.as_deref(),
        crate::store_arg::config_or_default(a.config.as_deref()),
    )?;
    let store = Store::open_existing(&url).await?;
    let loaded = load(&store, &selection, options).await?;
    let analysis = analyse(&loaded, &keys);
    render_out(a.format, &loaded, &analysis, &[], a.out.as_deref())?;
    if let Some(p) = &a.out {
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
