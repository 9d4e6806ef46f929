//! `firsttoken init`, `run`, `sessions`, `export`, `import`, `import-spans`, `cleanup`:
//! sessions from config to store.

mod run;
mod spans;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use firsttoken_record::store::{Store, mask_url};
use firsttoken_report::words;

use firsttoken_session::DEFAULT_STORE;

use crate::store_arg::{DEFAULT_CONFIG_FILE, StoreArg, config_or_default};
pub use run::{RunArgs, run};
pub use spans::{ImportSpansArgs, import_spans};

/// `firsttoken init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the config.
    #[arg(default_value = "firsttoken.toml")]
    path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
    /// The target is firsttoken's emulator or an app over it: write `emulated = true`, so its
    /// samples are labelled emulated. Without it, init asks on a terminal, else writes
    /// `emulated = false` (a real app's samples are `measured`).
    #[arg(long)]
    emulated: bool,
}

/// The line of the example config that labels its samples.
const EMULATED_LINE: &str = "\nemulated = true\n";

/// The commented default config, its samples labelled `emulated` or not.
fn default_config(emulated: bool) -> String {
    let text = firsttoken_plan::config::DEFAULT_CONFIG;
    if emulated {
        text.to_string()
    } else {
        text.replacen(EMULATED_LINE, "\nemulated = false\n", 1)
    }
}

/// Whether the target is the emulator: `--emulated`, else the answer on
/// a terminal, else no.
fn target_is_emulated(flag: bool) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if flag || !std::io::stdin().is_terminal() {
        return Ok(flag);
    }
    eprint!(
        "Is the target firsttoken's emulator, or an app whose model upstream is the emulator? [y/N] "
    );
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Write the commented default config.
pub fn init(a: InitArgs) -> anyhow::Result<ExitCode> {
    if a.path.exists() && !a.force {
        bail!("{} exists; pass --force to overwrite it", a.path.display());
    }
    let emulated = target_is_emulated(a.emulated)?;
    std::fs::write(&a.path, default_config(emulated))
        .with_context(|| format!("cannot write {}", a.path.display()))?;
    // The command as it works from here: `run` reads firsttoken.toml
    // unless told otherwise.
    let run = if a.path == std::path::Path::new("firsttoken.toml") {
        "firsttoken run".to_string()
    } else {
        format!("firsttoken run -c {}", a.path.display())
    };
    let label = if emulated {
        "emulated = true: the target is the emulator"
    } else {
        "emulated = false: samples are labelled measured; init --emulated when the target is the emulator"
    };
    outln!(
        "wrote {} ({label}) — edit the [app] and [direct] sections, then run `{run}`",
        a.path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `firsttoken sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Session config whose [session] store is listed when --store is not given (default:
    /// ./firsttoken.toml when it exists).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Delete this session (its id or a unique prefix) with its samples,
    /// spans and test-account ids, after asking on the terminal. Refused
    /// while it runs or while its test accounts were not all deleted.
    #[arg(long, value_name = "ID")]
    delete: Option<String>,
    /// With --delete: do not ask (needed when stdin is no terminal).
    #[arg(long, requires = "delete")]
    yes: bool,
    /// With --delete: delete a session whose test accounts were not all
    /// deleted; their ids are forgotten, so `cleanup` cannot find them.
    #[arg(long, requires = "delete")]
    forget_accounts: bool,
}

/// List sessions, newest first (or delete one).
pub async fn sessions(a: SessionsArgs) -> anyhow::Result<ExitCode> {
    let url = a.store.url(config_or_default(a.config.as_deref()))?;
    if let Some(id) = &a.delete {
        return delete(&a, id, &url).await;
    }
    let store = Store::open_existing(&url).await?;
    let list = store.sessions().await?;
    if list.is_empty() {
        outln!("no sessions in {}", mask_url(&url));
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    // A session id begins with its start, to the UTC second
    // (`new_session_id`), so the start needs no column of its own.
    t.set_header(vec![
        "id (UTC start)",
        "status",
        "provenance",
        "network",
        "code version",
        "vantage",
        "cleanup",
    ]);
    // The status and cleanup columns hold a word or two; why a session is
    // partial, and what its cleanup left with the command that retries it,
    // are printed whole below the table, which keeps the table narrow.
    let mut reasons = Vec::new();
    let mut cleanups = Vec::new();
    for s in list {
        // A session whose cleanup left its test accounts says so, with the
        // command that retries it.
        cleanups.extend(firsttoken_report::cleanup_note(&s, &url));
        let cleanup = firsttoken_report::cleanup_cell(&s);
        let status = match &s.status {
            firsttoken_record::session::SessionStatus::Running => "running",
            firsttoken_record::session::SessionStatus::Complete => "complete",
            firsttoken_record::session::SessionStatus::Partial { reason } => {
                reasons.push(format!("session {} partial: {reason}", s.id));
                "partial"
            }
        };
        t.add_row(vec![
            s.id,
            status.to_string(),
            s.provenance.as_str().to_string(),
            s.labels.network,
            s.labels.code_version,
            s.labels.vantage,
            cleanup,
        ]);
    }
    outln!("{t}");
    for r in reasons.into_iter().chain(cleanups) {
        outln!("{r}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions --delete ID`: the session found, the rule asked, the user
/// asked, then the store's one transaction.
async fn delete(a: &SessionsArgs, id: &str, url: &str) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let store = Store::open_existing(url).await?;
    let meta = store
        .session(id)
        .await?
        .with_context(|| format!("no session {id:?} in {}", mask_url(url)))?;
    match meta.keep_reason() {
        Some(firsttoken_record::session::KeepReason::AccountsLeft { .. }) if a.forget_accounts => {}
        Some(why) => {
            let retry = firsttoken_report::cleanup_retry(&meta, url);
            bail!(words::session::delete_refused(&meta, &why, &retry));
        }
        None => {}
    }
    if !a.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!(words::session::delete_unconfirmed(&meta.id));
        }
        eprint!("{}", words::session::delete_question(&meta));
        let mut answer = String::new();
        stdin.read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            outln!("kept session {}", meta.id);
            return Ok(ExitCode::SUCCESS);
        }
    }
    let done = store.delete_session(&meta.id).await?;
    outln!("{}", words::session::deleted(&done));
    Ok(ExitCode::SUCCESS)
}

/// Export formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per sample.
    Jsonl,
    /// Flat columns with a header row.
    Csv,
}

/// `firsttoken export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Session id (or a unique prefix).
    #[arg(long)]
    session: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    format: ExportFormat,
    /// Output file (default: stdout).
    #[arg(long, short)]
    out: Option<PathBuf>,
}

/// Write a session's raw samples, each row as it is read from the store.
pub async fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    use firsttoken_record::export::{Format, write_session};
    let url = a.store.plain();
    let store = Store::open_existing(&url).await?;
    let meta = store
        .session(&a.session)
        .await?
        .with_context(|| format!("no session {:?} in {}", a.session, mask_url(&url)))?;
    let out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout().lock(),
        )),
    };
    let format = match a.format {
        ExportFormat::Jsonl => Format::Jsonl,
        ExportFormat::Csv => Format::Csv,
    };
    write_session(&store, &meta, format, out).await?;
    Ok(ExitCode::SUCCESS)
}

/// `firsttoken import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// A JSONL export.
    file: PathBuf,
}

/// Read an export into the store, marked `imported`. Idempotent: a
/// session the store already holds (by its original id, whether stored
/// there first or imported before) is skipped with a message. Nothing is
/// stored unless the whole file passes the check: the file's first
/// session is written while the file is checked, in a transaction that
/// commits only once it passed; then each other session is stored in one
/// transaction from the cells the check made (see
/// `firsttoken_record::import`). On a terminal, progress goes to stderr.
pub async fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;

    use firsttoken_record::import::{Import, ImportEvent};
    let file = a.file.clone();
    let f =
        std::fs::File::open(&file).with_context(|| format!("cannot open {}", file.display()))?;
    let size = f.metadata().map_or(0, |m| m.len()).max(1);
    let tty = std::io::stderr().is_terminal();
    let path = a.store.plain();
    // A SQLite store this import creates, and leaves empty (the file was
    // refused), is removed again: a refused file writes nothing.
    let created = (!Store::is_postgres_url(&path) && !std::path::Path::new(&path).exists())
        .then(|| path.clone());
    let store = Store::open(&path).await?;
    let checking = move |bytes| {
        if tty {
            eprint!(
                "\r{}",
                words::session::import_checking(file.display(), bytes * 100 / size)
            );
        }
    };
    // The checking line ends at the first event (a skip, a store's progress
    // or a session stored).
    let (mut shown, mut checked) = (0, false);
    // The first session's frame is made as its rows are written, so the
    // first report reads it as later ones do.
    let frames = firsttoken_read::import_frames(firsttoken_read::STORED_FRAME_MIN_ROWS);
    let imported = Import::check_and_store_framing(f, &store, Some(frames), checking, &mut |e| {
        if tty && !std::mem::replace(&mut checked, true) {
            eprint!("\r\x1b[K");
        }
        match e {
            ImportEvent::Skipped { session, held_as } => outln!(
                "{}",
                words::session::import_skipped(&session.meta.id, held_as)
            ),
            ImportEvent::Progress { session, stored } => {
                let pct = stored * 100 / session.samples.max(1);
                if tty && pct != shown {
                    shown = pct;
                    eprint!(
                        "\r{}",
                        words::session::import_storing(&session.meta.id, pct)
                    );
                }
            }
            ImportEvent::Stored {
                session,
                stored_as,
                spans,
            } => {
                if tty {
                    eprint!("\r\x1b[K");
                }
                shown = 0;
                outln!(
                    "{}",
                    words::session::imported(
                        &session.meta.id,
                        &stored_as.id,
                        session.samples,
                        spans
                    )
                );
            }
        }
    })
    .await;
    if imported.is_err()
        && let Some(created) = created
        && store.sessions().await.is_ok_and(|s| s.is_empty())
    {
        drop(store);
        for file in [
            created.clone(),
            format!("{created}-wal"),
            format!("{created}-shm"),
        ] {
            let _ = std::fs::remove_file(file);
        }
    }
    imported.with_context(|| format!("cannot import {}", a.file.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// `firsttoken cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Session id (or a unique prefix).
    #[arg(long)]
    session: String,
    /// The session config that names how to clean up ([app.cleanup]); its [session] store is
    /// used when --store is not given.
    #[arg(long, short, default_value = DEFAULT_CONFIG_FILE)]
    config: PathBuf,
}

/// Retry deleting a session's test accounts and record the result.
pub async fn cleanup(a: CleanupArgs) -> anyhow::Result<ExitCode> {
    let cfg = firsttoken_plan::config::Config::load(&a.config)?;
    let url = a
        .store
        .store
        .clone()
        .or_else(|| cfg.session.store.clone())
        .unwrap_or_else(|| DEFAULT_STORE.into());
    let store = Store::open(&url).await?;
    let meta = store
        .session(&a.session)
        .await?
        .with_context(|| format!("no session {:?} in {}", a.session, mask_url(&url)))?;
    let Some(previous) = meta.cleanup.clone() else {
        outln!("{}", words::session::nothing_to_clean(&meta.id));
        return Ok(ExitCode::SUCCESS);
    };
    let section = cfg
        .app
        .cleanup
        .as_ref()
        .context("the config has no [app.cleanup] section")?;
    let source = firsttoken_session::Source::new(&cfg)?;
    let result = firsttoken_session::clean_up(
        section,
        &cfg.app.base_url,
        source.app_spec(),
        &previous.created_ids,
        &[],
    )
    .await;
    store.set_cleanup(&meta.id, &result).await?;
    let said = words::session::cleanup_retried(&meta.id, &result);
    if result.is_clean() {
        outln!("{said}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{said}");
        Ok(ExitCode::from(crate::EXIT_FAILED_REQUESTS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_labels_its_samples_in_one_line_init_can_change() {
        let text = firsttoken_plan::config::DEFAULT_CONFIG;
        assert_eq!(text.matches(EMULATED_LINE).count(), 1);
        for emulated in [false, true] {
            let cfg =
                firsttoken_plan::config::Config::parse(&default_config(emulated), "init").unwrap();
            assert_eq!(cfg.session.emulated, emulated);
        }
    }
}
