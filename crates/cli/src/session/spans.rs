//! `firsttoken import-spans`: an app's spans after the fact, from the OTLP
//! JSON lines the OpenTelemetry Collector's file exporter writes (one
//! `ExportTraceServiceRequest` per line), joined to a stored session by the
//! trace ids its samples sent.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use firsttoken_collect::TraceRegistry;
use firsttoken_collect::convert::{convert, decode_json};
use firsttoken_record::span::{MAX_SPANS_PER_SESSION, SpanRow};
use firsttoken_record::store::SpansAppended;

use super::StoreArg;
use crate::EXIT_FAILED_REQUESTS;

/// The longest line read, in bytes: a Collector batch is far smaller.
const MAX_LINE_BYTES: u64 = 64 << 20;
/// Spans stored per transaction.
const BATCH: usize = 1000;

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

/// Import the spans of `a.file` into `a.session`.
pub async fn import_spans(a: ImportSpansArgs) -> anyhow::Result<ExitCode> {
    if !(1..=MAX_SPANS_PER_SESSION).contains(&a.max_spans) {
        bail!("--max-spans must be from 1 to {MAX_SPANS_PER_SESSION}");
    }
    let file = std::fs::File::open(&a.file)
        .with_context(|| format!("cannot open {}", a.file.display()))?;
    let store = a.store.open().await?;
    let Some(session) = store.session(&a.session).await? else {
        bail!("no session {:?} in the store", a.session);
    };
    let registry = TraceRegistry::new();
    for r in store.samples(&session.id).await? {
        if let Some(t) = &r.sample.trace_id {
            registry.insert_hex(t);
        }
    }
    if registry.is_empty() {
        bail!(
            "session {} sent no traceparent (its samples have no trace id): no span can be joined to it",
            session.id
        );
    }
    let mut reader = BufReader::new(file);
    let (mut line_no, mut bad_lines) = (0u64, Vec::new());
    let (mut not_ours, mut malformed) = (0u64, 0u64);
    let mut total = SpansAppended::default();
    let mut batch: Vec<SpanRow> = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", a.file.display()))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line.len() as u64 > MAX_LINE_BYTES {
            bail!(
                "{}: line {line_no} is longer than {MAX_LINE_BYTES} bytes; nothing after it was read",
                a.file.display()
            );
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let request = match decode_json(&line) {
            Ok(r) => r,
            Err(e) => {
                bad_lines.push(format!("line {line_no}: {e}"));
                continue;
            }
        };
        let c = convert(&request, &session.id);
        malformed += c.malformed;
        for s in c.spans {
            if registry.contains_hex(&s.trace_id) {
                batch.push(s);
            } else {
                not_ours += 1;
            }
        }
        if batch.len() >= BATCH {
            total.add(store.append_spans(&session.id, &batch, a.max_spans).await?);
            batch.clear();
        }
    }
    if !batch.is_empty() {
        total.add(store.append_spans(&session.id, &batch, a.max_spans).await?);
    }
    outln!(
        "imported {} spans into session {} from {}; {} already stored; {} of other traces not stored; {} malformed",
        total.stored,
        session.id,
        a.file.display(),
        total.duplicate,
        not_ours,
        malformed
    );
    if total.refused > 0 {
        eprintln!(
            "warning: the session's span cap of {} was reached: {} more spans were not stored",
            a.max_spans, total.refused
        );
    }
    if bad_lines.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "error: {} of {line_no} lines were not OTLP trace data:",
        bad_lines.len()
    );
    for b in bad_lines.iter().take(5) {
        eprintln!("  {b}");
    }
    Ok(ExitCode::from(EXIT_FAILED_REQUESTS))
}
