//! `firsttoken probe`: arguments → a validated [`ProbeSpec`] → the drive
//! stage → per-request lines or JSON, a live progress line, a summary.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use firsttoken_analyze::RunSummary;
use firsttoken_drive::{DriveError, Finished};
use firsttoken_plan::{
    ConnectionMode, HttpVersion, ProbeSpec, RequestTemplate, Resolve, SocketIoSpec, StreamFormat,
    Target, Timeouts, Transport, WebSocketSpec,
};
use firsttoken_record::Sample;
use firsttoken_session::Pause;

use crate::watch::Watch;
use crate::{EXIT_FAILED_REQUESTS, EXIT_USAGE};

/// HTTP version choice.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HttpArg {
    /// HTTP/2 by ALPN over TLS when the server offers it, else HTTP/1.1.
    Auto,
    /// HTTP/1.1 only.
    #[value(name = "1.1")]
    Http11,
    /// HTTP/2 only (over TLS by ALPN; cleartext needs --http2-prior-knowledge).
    #[value(name = "2")]
    Http2,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  firsttoken probe http://127.0.0.1:8089/v1/chat/completions \\
      --body '{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' -n 20
  firsttoken probe https://host/v1/chat/completions -H 'Authorization: Bearer $KEY' \\
      --body @req.json -n 20 -c 4 --fresh --json > samples.jsonl

Header values may name environment variables as $NAME or ${NAME}; they are expanded here, so
the secret never appears in your shell history, and secret-looking headers are never printed.

EXIT STATUS: 0 every request succeeded, 1 some failed, 2 usage or configuration error.")]
pub struct ProbeArgs {
    /// The streaming endpoint, e.g. https://host/v1/chat/completions; a ws:// or wss:// URL is
    /// measured over a WebSocket: the body goes as one text frame per request and each text
    /// frame back is one event of --format (e.g. the Responses API's WebSocket mode).
    url: String,
    /// Request header `Name: value` (repeatable); `$NAME` in the value reads an environment variable.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// Request body, inline or `@file` (sends a POST, like curl -d).
    #[arg(long, short = 'd', value_name = "JSON|@FILE")]
    body: Option<String>,
    /// HTTP method (default: POST with a body, GET without).
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    method: Option<String>,
    /// Number of counted requests (warm-ups not included).
    #[arg(short = 'n', long, default_value_t = 10)]
    requests: u64,
    /// Concurrent workers, each with its own connection.
    #[arg(short = 'c', long, default_value_t = 1)]
    concurrency: u32,
    /// New DNS lookup, TCP connect and TLS handshake for every request.
    #[arg(long, conflicts_with = "warm")]
    fresh: bool,
    /// Reuse one connection per worker, opened by a warm-up request that is shown but not counted (default).
    #[arg(long)]
    warm: bool,
    /// HTTP version.
    #[arg(long, value_enum, default_value_t = HttpArg::Auto)]
    http: HttpArg,
    /// Speak HTTP/2 over cleartext without upgrade (h2c), like curl.
    #[arg(long)]
    http2_prior_knowledge: bool,
    /// Stream format: auto, openai-chat, openai-completions, anthropic, responses, ollama, text, vercel-ui, gradio, sse-json:<JSON pointer>.
    #[arg(long, default_value = "auto")]
    format: String,
    /// WebSocket (ws:// or wss:// URL): a text frame sent first on each new socket, before the
    /// first request (a session's own set-up message), inline or `@file`.
    #[arg(long, value_name = "TEXT|@FILE")]
    ws_opening: Option<String>,
    /// WebSocket: on each new socket, wait for a text frame whose JSON `type` is this (e.g.
    /// session.created) before the first request.
    #[arg(long, value_name = "TYPE")]
    ws_await: Option<String>,
    /// Socket.IO (Engine.IO v4) over the WebSocket: emit the body as this event (e.g. chat). The
    /// URL is the Engine.IO endpoint, e.g. ws://host/socket.io/ (EIO=4&transport=websocket is
    /// added when missing); the handshake (open packet, CONNECT) is timed before the request.
    #[arg(long, value_name = "NAME", requires = "sio_reply")]
    sio_event: Option<String>,
    /// Socket.IO: the event carrying the answer (e.g. chat-events, or Chainlit's stream_token);
    /// its payload is read with --format (e.g. sse-json:/data/content).
    #[arg(long, value_name = "NAME", requires = "sio_event")]
    sio_reply: Option<String>,
    /// Socket.IO: a JSON pointer into a reply's payload whose `true` ends the answer (e.g. /data/done).
    #[arg(long, value_name = "POINTER")]
    sio_done_pointer: Option<String>,
    /// Socket.IO: an event whose arrival ends the answer (e.g. stream_end).
    #[arg(long, value_name = "NAME")]
    sio_end_event: Option<String>,
    /// Socket.IO: a JSON pointer into a reply's payload where a value other than null or false is
    /// an error (e.g. /data/error).
    #[arg(long, value_name = "POINTER")]
    sio_error_pointer: Option<String>,
    /// Socket.IO: the CONNECT packet's auth payload, a JSON object (e.g. '{"token":"$TOKEN"}').
    #[arg(long, value_name = "JSON")]
    sio_auth: Option<String>,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// Trust only the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    cacert: Option<std::path::PathBuf>,
    /// Go through this forward HTTP proxy (`http://[user:password@]host:port`; "" for none). Default: the https_proxy / http_proxy / all_proxy environment, minus no_proxy, as curl reads them. An https target gets a CONNECT tunnel, timed as its own phase (proxy_ms).
    #[arg(long, short = 'x', value_name = "URL")]
    proxy: Option<String>,
    /// A returning visitor: new connections resume the TLS session of an earlier one (the first is a full handshake). Without it every new connection is a first visit: a full handshake, no session cache.
    #[arg(long)]
    tls_resume: bool,
    /// Largest stream event or line accepted, in bytes (default 1 MiB); a longer one fails the request as `decode`.
    #[arg(long, value_name = "BYTES", default_value_t = firsttoken_plan::DEFAULT_MAX_EVENT_BYTES)]
    max_event_bytes: usize,
    /// Ask for a compressed response as a browser does (Accept-Encoding: gzip, deflate, br, zstd) and decode it, like curl --compressed. Without it the probe asks for identity and an encoded response fails as `decode`.
    #[arg(long)]
    compressed: bool,
    /// Send a W3C traceparent header with a fresh trace id per request (shown in --json output as trace_id), so the app's OpenTelemetry spans can be found by it.
    #[arg(long)]
    trace_context: bool,
    /// Deadline for DNS + TCP + TLS, e.g. 10s, 500ms (at most 24h).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    connect_timeout: Duration,
    /// Deadline for a whole request, from start to stream end (at most 24h).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "120s")]
    timeout: Duration,
    /// Connect to ADDR for HOST:PORT instead of resolving it (repeatable), like curl.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    resolve: Vec<String>,
    /// Print one JSON object per request (NDJSON) to stdout; the summary goes to stderr.
    #[arg(long)]
    json: bool,
    /// Print nothing but --json's lines: no per-request lines, no summary, no progress.
    #[arg(short, long)]
    quiet: bool,
    /// A live view in the terminal instead of the per-request lines: requests done, errors by
    /// kind, TTFT p50/p95 with intervals, a TTFT histogram, requests in flight, the last errors.
    /// q stops (as Ctrl-C). Falls back to the lines when stdout is not a terminal.
    #[arg(long, conflicts_with_all = ["json", "quiet"])]
    watch: bool,
}

impl TryFrom<ProbeArgs> for ProbeSpec {
    type Error = anyhow::Error;

    fn try_from(a: ProbeArgs) -> anyhow::Result<ProbeSpec> {
        let ws_url = firsttoken_plan::transport::ws_url(&a.url);
        let target = Target::parse(ws_url.as_deref().unwrap_or(&a.url))?;
        let transport = match &ws_url {
            Some(_) => Transport::WebSocket(WebSocketSpec {
                opening: a
                    .ws_opening
                    .as_deref()
                    .map(read_inline_or_file)
                    .transpose()?,
                await_type: a.ws_await.clone(),
                socketio: match (&a.sio_event, &a.sio_reply) {
                    (Some(event), Some(reply_event)) => Some(SocketIoSpec {
                        event: event.clone(),
                        reply_event: reply_event.clone(),
                        done_pointer: a.sio_done_pointer.clone(),
                        end_event: a.sio_end_event.clone(),
                        error_pointer: a.sio_error_pointer.clone(),
                        // A secret from the environment ($TOKEN) is read here.
                        auth: a
                            .sio_auth
                            .as_deref()
                            .map(firsttoken_plan::env::expand_env)
                            .transpose()?,
                    }),
                    (None, None)
                        if a.sio_done_pointer.is_none()
                            && a.sio_end_event.is_none()
                            && a.sio_error_pointer.is_none()
                            && a.sio_auth.is_none() =>
                    {
                        None
                    }
                    _ => bail!(
                        "Socket.IO needs both --sio-event (the event to emit) and --sio-reply (the event carrying the answer)"
                    ),
                },
            }),
            None if a.ws_opening.is_some()
                || a.ws_await.is_some()
                || a.sio_event.is_some()
                || a.sio_reply.is_some() =>
            {
                bail!("--ws-* and --sio-* options are for ws:// and wss:// URLs")
            }
            None => Transport::Http,
        };
        let body = match a.body.as_deref() {
            None => None,
            Some(b) => match b.strip_prefix('@') {
                Some(path) => Some(
                    std::fs::read(path)
                        .with_context(|| format!("cannot read the request body file {path}"))?
                        .into(),
                ),
                None => Some(b.as_bytes().to_vec().into()),
            },
        };
        let mut request = RequestTemplate::new(target, a.method.as_deref(), body)?;
        for h in &a.headers {
            // A value taken from the environment is a secret, whatever the
            // header's name.
            let from_env = h.split_once(':').is_some_and(|(_, v)| v.contains('$'));
            let line = match h.split_once(':') {
                Some((name, value)) => format!(
                    "{name}: {}",
                    firsttoken_plan::env::expand_env(value.trim())?
                ),
                None => h.clone(),
            };
            if from_env {
                request.add_secret_header_line(&line)?;
            } else {
                request.add_header_line(&line)?;
            }
        }
        let mut spec = ProbeSpec::new(request);
        spec.transport = transport;
        spec.requests = a.requests;
        spec.concurrency = a.concurrency;
        spec.mode = if a.fresh {
            ConnectionMode::Fresh
        } else {
            ConnectionMode::Warm
        };
        spec.http = match (a.http, a.http2_prior_knowledge) {
            (_, true) => HttpVersion::Http2,
            (HttpArg::Auto, false) => HttpVersion::Auto,
            (HttpArg::Http11, false) => HttpVersion::Http1,
            (HttpArg::Http2, false) => HttpVersion::Http2,
        };
        // The spec refuses it too; said first, before the h2c advice.
        if spec.http == HttpVersion::Http2 && spec.transport.websocket().is_some() {
            bail!(
                "a WebSocket opens over HTTP/1.1's upgrade; leave out --http 2 and --http2-prior-knowledge"
            );
        }
        if spec.http == HttpVersion::Http2 && !spec.request.target.tls() && !a.http2_prior_knowledge
        {
            bail!("HTTP/2 over cleartext needs --http2-prior-knowledge (h2c)");
        }
        if a.http2_prior_knowledge && spec.request.target.tls() {
            bail!(
                "--http2-prior-knowledge is for http:// URLs; over https HTTP/2 is negotiated by ALPN (--http 2)"
            );
        }
        spec.format = a.format.parse::<StreamFormat>()?;
        spec.max_event_bytes = a.max_event_bytes;
        spec.compressed = a.compressed;
        spec.trace_context = a.trace_context;
        spec.tls.insecure = a.insecure;
        spec.tls.resume = a.tls_resume;
        spec.proxy =
            firsttoken_plan::proxy::choose(&spec.request.target, a.proxy.as_deref(), |n| {
                std::env::var(n).ok()
            })?;
        if let Some(path) = &a.cacert {
            spec.tls.ca_pem = Some(
                std::fs::read(path)
                    .with_context(|| format!("cannot read the CA file {}", path.display()))?,
            );
        }
        // Range checks (longer than zero, at most a day) are the spec's own.
        spec.timeouts = Timeouts {
            connect: a.connect_timeout,
            request: a.timeout,
        };
        spec.resolve = a
            .resolve
            .iter()
            .map(|r| r.parse::<Resolve>())
            .collect::<Result<_, _>>()?;
        Ok(spec.validate()?)
    }
}

/// `TEXT` as given, or the contents of the file named after `@`.
fn read_inline_or_file(v: &str) -> anyhow::Result<String> {
    match v.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the WebSocket opening file {path}")),
        None => Ok(v.to_string()),
    }
}

fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    // Draws only when stderr is a terminal; redrawn at most 4 times a second
    // so it costs the measurement nothing noticeable.
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} requests [{elapsed_precise}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// Run the probe; the exit code says whether every request succeeded.
pub async fn run(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let quiet = args.quiet;
    let watch = args.watch && std::io::stdout().is_terminal();
    let spec = match ProbeSpec::try_from(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let total = spec.requests;
    if !quiet && let Some(p) = &spec.proxy {
        eprintln!("through the proxy {}", p.masked());
    }
    let cancel = crate::shutdown_token();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Sample>(1024);
    let pause = Pause::new();
    let mut view = if watch {
        let protocol = firsttoken_plan::protocol::Protocol::probe(&spec);
        Some(
            Watch::start(&protocol, None, pause.clone(), false, cancel.clone())
                .context("cannot start the live view (probe without --watch)")?,
        )
    } else {
        None
    };
    let gate = pause.gate(std::sync::Arc::new(firsttoken_drive::Unlimited));
    let drive = tokio::spawn(firsttoken_drive::run_probe_gated(
        spec,
        tx,
        cancel.clone(),
        gate,
    ));
    let pb = progress_bar(total, quiet || watch);
    let mut samples: Vec<Sample> = Vec::new();
    let mut failed = 0u64;
    while let Some(s) = rx.recv().await {
        if let Some(v) = &view {
            v.sample("probe", &s);
            failed += u64::from(!s.warmup && !s.is_ok());
            samples.push(s);
            continue;
        }
        // JSON lines are the output; the text lines are progress, which
        // -q silences. A failed write (a full disk) ends the probe: every
        // later sample would be lost too.
        if json || !quiet {
            let line = if json {
                s.to_json_line()
            } else {
                firsttoken_report::sample_line(&s)
            };
            pb.suspend(|| outln!("{line}"));
            if crate::out::failed() {
                cancel.cancel();
            }
        }
        if !s.warmup {
            pb.inc(1);
            if !s.is_ok() {
                failed += 1;
                pb.set_message(format!("{failed} failed"));
            }
        }
        samples.push(s);
    }
    pb.finish_and_clear();
    if let Some(mut v) = view.take() {
        v.finish()
            .context("the live view failed; the summary follows")?;
    }
    let finished = match settle(drive.await)? {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    if !quiet {
        let summary = RunSummary::of(&samples);
        let mut text = firsttoken_report::summary_table(&summary);
        if cancel.is_cancelled() {
            text.push_str(&format!(
                "\ninterrupted: {} of {total} requests done, {} abandoned in flight",
                summary.requests, finished.cancelled_in_flight
            ));
        }
        if json {
            eprintln!("{text}");
        } else {
            outln!("\n{text}");
        }
    }
    let counted = samples.iter().filter(|s| !s.warmup);
    Ok(
        if counted.clone().any(|s| !s.is_ok()) || cancel.is_cancelled() {
            ExitCode::from(EXIT_FAILED_REQUESTS)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// How the drive task ended: finished; broken (a panic: said on stderr,
/// exit 1 whatever was measured); or a setup error (an unusable CA file,
/// nothing sent), returned as an error.
fn settle(
    joined: Result<Result<Finished, DriveError>, tokio::task::JoinError>,
) -> anyhow::Result<Result<Finished, ExitCode>> {
    let broken = |e: &dyn std::fmt::Display| {
        eprintln!("error: the probe stopped: {e}");
        Ok(Err(ExitCode::from(EXIT_FAILED_REQUESTS)))
    };
    match joined {
        Ok(Ok(f)) => Ok(Ok(f)),
        Ok(Err(e @ DriveError::Tls(_))) => Err(e.into()),
        Ok(Err(e)) => broken(&e),
        Err(e) => broken(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_fails_the_probe_and_a_setup_error_is_an_error() {
        let failed = ExitCode::from(EXIT_FAILED_REQUESTS);
        let panicked = DriveError::Panicked("boom".into());
        assert_eq!(settle(Ok(Err(panicked))).unwrap().unwrap_err(), failed);
        let joined = tokio::spawn(async { panic!("boom") }).await;
        let joined = joined.map(|()| Ok(Finished::default()));
        assert_eq!(settle(joined).unwrap().unwrap_err(), failed);
        assert!(settle(Ok(Err(DriveError::Tls("no CA".into())))).is_err());
        let done = settle(Ok(Ok(Finished::default()))).unwrap().unwrap();
        assert_eq!(done.cancelled_in_flight, 0);
    }
}
