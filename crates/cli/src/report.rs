//! `firsttoken report`: a selection of stored sessions, or a run across
//! agents, analysed and rendered (terminal, Markdown, JSON or HTML).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::GroupKey;
use firsttoken_read::{LoadOptions, Selection, analyse, load};
use firsttoken_record::store::Store;
use firsttoken_session::DEFAULT_STORE;

use crate::render::{Format, render_out};

/// `firsttoken report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result store: a SQLite file or a postgres:// URL.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
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
    };
    let store = Store::open_existing(&a.store).await?;
    let loaded = load(&store, &selection, options).await?;
    let analysis = analyse(&loaded, &keys);
    render_out(a.format, &loaded, &analysis, &[], a.out.as_deref())?;
    if let Some(p) = &a.out {
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
