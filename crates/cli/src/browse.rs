//! `firsttoken browse`: arguments → a validated [`BrowseSpec`] → the
//! browser client (`firsttoken-browse`) → one line (or JSON object) per
//! message and a summary from the report crate.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use firsttoken_browse::recording::Recording;
use firsttoken_browse::{BrowseSpec, Browser, Cookie, Rounds, SecretValue, SendAction};
use firsttoken_drive::trace::TraceContext;
use firsttoken_plan::config::TracesSection;
use firsttoken_record::Sample;
use firsttoken_session::SpanReceiver;

use crate::{EXIT_FAILED_REQUESTS, out};

/// Fresh or returning visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VisitArg {
    /// One page for every message: a returning user in one conversation.
    Warm,
    /// A new browser context (no cookies, no cache, new connections) and a
    /// fresh page load for every message: a first visit each time.
    Fresh,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  firsttoken browse http://127.0.0.1:8090/chat --input '#message' --answer '.assistant' \\
      --local-storage 'refapp_token=$REFAPP_TOKEN' --message 'Hello' -n 20

Stamps per message, on the browser's clock, in ms from the request that carries the message:
the user's action (a negative lead), the request sent, response head, first data, the first
content token as the network saw it (ttft), the first token painted on screen, the last one.
Render lag = painted − network TTFT. Chromium resolves only the page's host, loopback and
--allow-host names; its background networking is off.

EXIT STATUS: 0 every message painted an answer, 1 some did not, 2 usage or configuration error.")]
pub struct BrowseArgs {
    /// The chat page to open.
    url: String,
    /// CSS selector of the message input.
    #[arg(long, value_name = "SELECTOR")]
    input: String,
    /// CSS selector of the answer element (the last match after sending is the answer).
    #[arg(long, value_name = "SELECTOR")]
    answer: String,
    /// How to send: `enter`, or the CSS selector of a send button to click.
    #[arg(long, value_name = "enter|SELECTOR", default_value = "enter")]
    send: String,
    /// The message to send (repeatable; cycled through for -n).
    #[arg(long, short = 'm', value_name = "TEXT", default_value = "Hello")]
    message: Vec<String>,
    /// Messages to measure.
    #[arg(short = 'n', long, default_value_t = 1)]
    count: u32,
    /// Warm: one page, messages in one conversation; fresh: a new context and page load each.
    #[arg(long, value_enum, default_value_t = VisitArg::Warm)]
    visit: VisitArg,
    /// Users at once: this many browser contexts (own cookies, cache and connections) in
    /// one browser, each sending its message at the same moment, round after round until
    /// -n messages are measured; above 1 each message is stored in phase `concurrency`
    /// at this level.
    #[arg(long, short = 'c', value_name = "N", default_value_t = 1)]
    contexts: u32,
    /// A localStorage entry set before the page's scripts run, KEY=VALUE; a value `$NAME`
    /// reads the environment variable NAME (for sign-in tokens: never printed).
    #[arg(long = "local-storage", value_name = "KEY=VALUE")]
    local_storage: Vec<String>,
    /// A cookie set on the page's host before it loads, NAME=VALUE; a value `$NAME` reads
    /// the environment variable NAME (a session cookie: never printed); repeatable.
    #[arg(long = "cookie", value_name = "NAME=VALUE")]
    cookie: Vec<String>,
    /// A storage-state file (Playwright's storageState JSON: cookies, and each origin's
    /// localStorage) loaded into every context before the page loads: a sign-in saved once.
    #[arg(long, value_name = "FILE")]
    storage_state: Option<PathBuf>,
    /// Only a request whose URL contains this carries the message (default: the first
    /// request after the action whose body has a content token).
    #[arg(long, value_name = "TEXT")]
    request_match: Option<String>,
    /// When the page sends the message on one request and reads the answer from another
    /// (Gradio: --send-match queue/join --request-match queue/data): the first request after
    /// the action whose URL contains this is where the message's times start.
    #[arg(long, value_name = "TEXT")]
    send_match: Option<String>,
    /// The answer comes over the page's WebSocket (picked by --request-match) as Socket.IO
    /// events of this name (`42["NAME", payload]`); each payload is read with --format
    /// (e.g. sse-json:/data/content). Without it, each text frame is one event of --format.
    #[arg(long, value_name = "NAME")]
    socket_event: Option<String>,
    /// With --socket-event: the JSON pointer whose `true` in a payload ends the answer
    /// (e.g. /data/done).
    #[arg(long, value_name = "POINTER", requires = "socket_event")]
    socket_done: Option<String>,
    /// How the message's response body is read for content tokens: auto (from its
    /// Content-Type), openai-chat, anthropic, responses, vercel-ui, gradio (Gradio's queue
    /// stream, with --request-match queue/data), sse-json:<JSON pointer>, ….
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    format: String,
    /// A further host name Chromium may resolve (a CDN the page loads from); repeatable.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
    /// Longest wait for one message, from the action to its last paint.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    timeout_ms: u64,
    /// How long the answer must stay unchanged after the stream ends to count as done.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    settle_ms: u64,
    /// The Chromium executable [default: FIRSTTOKEN_CHROMIUM, else chromium on PATH].
    #[arg(long, value_name = "PATH")]
    chromium: Option<PathBuf>,
    /// One JSON object per message (snake_case keys, ms) instead of lines.
    #[arg(long)]
    json: bool,
    /// Seed of the bootstrap behind the render lag's interval.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also keep the messages as a session in this store (a SQLite file or a
    /// postgres:// URL): path `browser`, phase warm or fresh, each stored as
    /// it is measured; `firsttoken report` and `export` read it.
    #[arg(long, value_name = "STORE")]
    store: Option<String>,
    /// Send no W3C traceparent (by default each message's requests carry one with a fresh
    /// trace id, stored with the sample, so the app's spans join it). Set before the user's
    /// action with Network.setExtraHTTPHeaders: nothing is intercepted on the timed path; a
    /// page that calls another origin makes a CORS preflight for it.
    #[arg(long)]
    no_traceparent: bool,
    /// Receive the app's spans over OTLP/HTTP on this address while the session runs (the
    /// app exports to http://ADDR/v1/traces) and store those of the messages' traces with
    /// the session, as `run`'s [traces] listen does; needs --store.
    #[arg(long, value_name = "ADDR", requires = "store")]
    otlp_listen: Option<String>,
}

/// Validated `browse` arguments.
struct Spec {
    browse: BrowseSpec,
    messages: Vec<String>,
    count: u32,
    visit: VisitArg,
    contexts: u32,
    json: bool,
    seed: u64,
    store: Option<String>,
    otlp_listen: Option<String>,
}

impl TryFrom<BrowseArgs> for Spec {
    type Error = anyhow::Error;

    fn try_from(a: BrowseArgs) -> anyhow::Result<Spec> {
        if a.count == 0 {
            bail!("-n: at least one message");
        }
        if a.message.iter().any(|m| m.trim().is_empty()) {
            bail!("--message: a message cannot be empty");
        }
        if a.timeout_ms == 0 {
            bail!("--timeout-ms: must be above 0");
        }
        if !(1..=MAX_CONTEXTS).contains(&a.contexts) {
            bail!("--contexts: from 1 to {MAX_CONTEXTS}");
        }
        let local_storage = pairs("--local-storage", &a.local_storage)?;
        let cookies = pairs("--cookie", &a.cookie)?;
        let mut browse =
            BrowseSpec::with_chromium(&a.url, &a.input, &a.answer, a.chromium.as_deref())?;
        browse.send = if a.send == "enter" {
            SendAction::Enter
        } else {
            SendAction::Click(a.send)
        };
        browse.request_match = a.request_match;
        browse.send_match = a.send_match;
        browse.socket_event = a.socket_event;
        browse.socket_done = a.socket_done;
        browse.format = a
            .format
            .parse()
            .with_context(|| format!("--format {}", a.format))?;
        browse.local_storage = local_storage;
        browse.cookies = cookies
            .into_iter()
            .map(|(name, value)| Cookie::new(&name, value))
            .collect();
        if let Some(file) = &a.storage_state {
            browse.add_storage_state(file).context("--storage-state")?;
        }
        browse.allow_hosts = a.allow_host;
        browse.timeout = Duration::from_millis(a.timeout_ms);
        browse.settle = Duration::from_millis(a.settle_ms);
        browse.traceparent = !a.no_traceparent;
        if a.otlp_listen.is_some() && a.no_traceparent {
            bail!(
                "--otlp-listen: the spans join by the traceparent that --no-traceparent turns off"
            );
        }
        Ok(Spec {
            browse,
            messages: a.message,
            count: a.count,
            visit: a.visit,
            contexts: a.contexts,
            json: a.json,
            seed: a.seed,
            store: a.store,
            otlp_listen: a.otlp_listen,
        })
    }
}

/// `KEY=VALUE` arguments of `flag`, a value `$NAME` read from the
/// environment (kept as a secret).
fn pairs(flag: &str, entries: &[String]) -> anyhow::Result<Vec<(String, SecretValue)>> {
    let mut out = Vec::new();
    for entry in entries {
        let Some((k, v)) = entry.split_once('=') else {
            // The argument is not shown: it may be a value pasted alone.
            bail!("{flag}: expected KEY=VALUE, got an argument without `=`");
        };
        let value = match v.strip_prefix('$') {
            Some(name) => std::env::var(name).with_context(|| {
                format!("{flag} {k}: the environment variable {name} is not set")
            })?,
            None => v.to_string(),
        };
        out.push((k.to_string(), SecretValue(value)));
    }
    Ok(out)
}

/// Run `firsttoken browse`.
pub async fn run(args: BrowseArgs) -> anyhow::Result<ExitCode> {
    let spec = Spec::try_from(args)?;
    let mut receiver = None;
    let mut recording = match &spec.store {
        Some(at) => {
            let store = firsttoken_record::Store::open(at)
                .await
                .with_context(|| format!("--store {}", firsttoken_record::store::mask_url(at)))?;
            let fresh = spec.visit == VisitArg::Fresh;
            let level = (spec.contexts > 1).then_some(spec.contexts);
            let rec = Recording::start(
                store.clone(),
                &spec.browse,
                fresh,
                level,
                spec.count,
                spec.seed,
            )
            .await?;
            let traces = TracesSection {
                listen: spec.otlp_listen.clone(),
                ..TracesSection::default()
            };
            receiver = SpanReceiver::start(&traces, &store, rec.session_id())
                .await
                .context("--otlp-listen")?;
            Some(rec)
        }
        None => None,
    };
    let shutdown = crate::shutdown_token();
    // The measuring future (and with it the browser) is dropped before the
    // session is finished.
    let results = {
        let work = measure_all(&spec, recording.as_mut(), receiver.as_ref());
        tokio::select! {
            r = work => Some(r),
            _ = shutdown.cancelled() => None,
        }
    };
    if let Some(r) = receiver {
        let t = r.finish().await;
        eprintln!(
            "spans: {} stored, {} of other traces, {} lost{}",
            t.stored,
            t.not_ours,
            t.lost,
            t.store_error.map(|e| format!(" ({e})")).unwrap_or_default()
        );
    }
    let Some(results) = results else {
        // The browser was dropped with the measuring future: its process
        // group is gone.
        eprintln!("interrupted");
        if let Some(rec) = recording {
            let n = rec.stored();
            let reason = format!("interrupted after {n} of {} messages", spec.count);
            let meta = rec.finish(Some(reason)).await?;
            eprintln!("session {} kept as partial ({n} messages)", meta.id);
        }
        return Ok(ExitCode::from(EXIT_FAILED_REQUESTS));
    };
    let results = match (results, recording) {
        (Ok(r), Some(rec)) => {
            let meta = rec.finish(None).await?;
            eprintln!("session {} stored ({} messages)", meta.id, r.len());
            r
        }
        (Ok(r), None) => r,
        (Err(e), Some(rec)) => {
            let n = rec.stored();
            let meta = rec
                .finish(Some(format!("stopped after {n} messages: {e:#}")))
                .await?;
            eprintln!("session {} kept as partial ({n} messages)", meta.id);
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    let all_ok = results.iter().all(|s| s.error.is_none());
    if !spec.json {
        let settings = firsttoken_analyze::Settings::new(spec.seed);
        out::text(format_args!(
            "{}",
            firsttoken_report::browse::summary(&results, &settings)
        ));
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    })
}

/// Most browser contexts at once (each is a renderer process).
const MAX_CONTEXTS: u32 = firsttoken_plan::config::MAX_BROWSER_CONTEXTS;

async fn measure_all(
    spec: &Spec,
    mut recording: Option<&mut Recording>,
    receiver: Option<&SpanReceiver>,
) -> anyhow::Result<Vec<Sample>> {
    let browser = Browser::launch(&spec.browse).await?;
    let fresh = spec.visit == VisitArg::Fresh;
    let mut rounds = Rounds::new(
        &browser,
        vec![spec.browse.clone()],
        fresh,
        spec.contexts,
        spec.count,
    )?;
    let mut results = Vec::new();
    let message = |i: u32| {
        let text = spec.messages[i as usize % spec.messages.len()].clone();
        let trace = spec.browse.traceparent.then(TraceContext::random).flatten();
        // The receiver keeps this trace's spans from before it is sent.
        if let (Some(r), Some(t)) = (receiver, &trace) {
            r.expect(&t.trace_id);
        }
        (text, trace)
    };
    while let Some(round) = rounds.next(message).await? {
        for sent in round {
            let s = sent.measured.to_sample(u64::from(sent.index), sent.context);
            if let Some(rec) = recording.as_deref_mut() {
                rec.add(&s, sent.began).await?;
            }
            if spec.json {
                out::line(format_args!("{}", serde_json::to_string(&s)?));
            } else {
                out::text(format_args!("{}", firsttoken_report::browse::line(&s)));
            }
            results.push(s);
        }
    }
    Ok(results)
}
