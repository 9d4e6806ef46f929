//! `firsttoken import-spans`: an app's spans after the fact, from the OTLP
//! JSON lines the OpenTelemetry Collector's file exporter writes (one
//! `ExportTraceServiceRequest` per line), joined to a stored session by the
//! trace ids its samples sent: `firsttoken_collect::import` reads and
//! stores them, report's `words::session` says what it did.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use firsttoken_collect::import::{ImportError, SpanCap, import_otlp_lines};
use firsttoken_record::span::MAX_SPANS_PER_SESSION;
use firsttoken_report::words;

use crate::EXIT_FAILED_REQUESTS;
use crate::store_arg::StoreArg;

/// `firsttoken import-spans`.
#[derive(Debug, Args)]
#[command(
    after_help = "Reads OTLP JSON lines (the OpenTelemetry Collector's file exporter: one ExportTraceServiceRequest per line) and stores the spans whose trace id one of the session's samples sent in its traceparent header; spans of other traces are counted, not stored.
EXIT STATUS: 0 every line read, 1 some lines were not OTLP trace data (the others were imported), 2 usage error (no such file or session)."
)]
pub struct ImportSpansArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The session the spans belong to (an id or a unique prefix).
    #[arg(long)]
    session: String,
    /// The most spans the session keeps (default and at most 200000); the rest are counted.
    #[arg(long, default_value_t = MAX_SPANS_PER_SESSION)]
    max_spans: usize,
    /// OTLP JSON lines.
    file: PathBuf,
}

/// Import the spans of `a.file` into `a.session` (the collect library's
/// [`import_otlp_lines`]) and say what it did.
pub async fn import_spans(a: ImportSpansArgs) -> anyhow::Result<ExitCode> {
    let cap = SpanCap::new(a.max_spans)?;
    let file = std::fs::File::open(&a.file)
        .with_context(|| format!("cannot open {}", a.file.display()))?;
    let store = firsttoken_record::Store::open(&a.store.plain()).await?;
    let Some(session) = store.session(&a.session).await? else {
        bail!("no session {:?} in the store", a.session);
    };
    let got = match import_otlp_lines(&store, &session, file, cap).await {
        Ok(got) => got,
        Err(e @ ImportError::LineTooLong { .. }) => bail!("{}: {e}", a.file.display()),
        Err(ImportError::Read(e)) => {
            return Err(anyhow::Error::new(e).context(format!("cannot read {}", a.file.display())));
        }
        Err(e) => return Err(e.into()),
    };
    outln!(
        "{}",
        words::session::spans_imported(
            &session.id,
            a.file.display(),
            got.appended.stored,
            got.appended.duplicate,
            got.other_traces,
            got.malformed
        )
    );
    if got.appended.refused > 0 {
        eprintln!(
            "warning: {}",
            words::session::span_cap_reached(cap.get(), got.appended.refused)
        );
    }
    if got.bad_lines.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "error: {}",
        words::session::bad_lines(got.lines, &got.bad_lines)
    );
    Ok(ExitCode::from(EXIT_FAILED_REQUESTS))
}
