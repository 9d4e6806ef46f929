//! `firsttoken emulate`: the provider emulator as a server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use firsttoken_emulator::{
    DEFAULT_LIMITS, Limits, Profile, Settings, TruthLog, app, serve_with, tls_server_config,
};

#[derive(Debug, Args)]
#[command(after_help = "\
Without --profile, the built-in profile serves three providers named for their shape: quickstart \
(TTFT ~150 ms, fast output), steady (~400 ms, medium) and bulk (~500 ms, ~40 tokens/s). \
`firsttoken emulate --print-profile` prints it, commented, as a starting point.

Routing (request body, as OpenRouter): \"provider\": {\"order\": [..], \"only\": [..], \
\"ignore\": [..], \"allow_fallbacks\": true}. Every chunk names its \"provider\" (and the \
x-provider header); the last carries usage with cost in USD.

Per-request headers:
  x-emulator-ttft-ms, x-emulator-itl-ms, x-emulator-tokens   fix the timing of this response
  x-emulator-fault: 429|500|503|stream-error|drop|stall|slow-headers|cold
  x-emulator-fault-provider: NAME     the provider the fault hits (default: the first tried)
  x-emulator-fault-after-tokens: N    content tokens before stream-error/drop/stall (default 4)
  x-emulator-stall-ms: N|forever      (default 5000)
  x-emulator-slow-headers-ms: N       (default 2000)
  x-emulator-retry-after-s: N         Retry-After of a 429 (default 1)
  x-emulator-cold-start-ms: N         for the cold fault (default: the profile's, else 1000)

The first line on stdout is the address it listens on, e.g. `listening on http://127.0.0.1:8089`.")]
pub struct EmulateArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8089")]
    listen: SocketAddr,
    /// Providers, timing, prices and faults from this TOML profile (default: the built-in one).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Print the built-in profile (commented TOML) and exit.
    #[arg(long, conflicts_with = "profile")]
    print_profile: bool,
    /// Seed of every random draw (TTFT, answer length, faults); the same seed replays the same draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Serve one request at a time; the rest queue (the single-worker wall).
    #[arg(long)]
    serial: bool,
    /// Fix the time from request read to the first content token, in milliseconds (overrides the profile).
    #[arg(long)]
    ttft_ms: Option<f64>,
    /// Add this many milliseconds to each request's TTFT per input token (the words of its
    /// messages, as its usage's prompt_tokens counts them): a prefill that grows with the
    /// context, e.g. over a conversation's turns.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    ttft_per_input_token_ms: f64,
    /// Fix the time between content tokens, in milliseconds (overrides the profile).
    #[arg(long)]
    itl_ms: Option<f64>,
    /// Fix the content tokens per response (overrides the profile; a request's max_tokens lowers it).
    #[arg(long)]
    tokens: Option<u32>,
    /// Model name reported when the request names none.
    #[arg(long, default_value = "emulated-model")]
    model: String,
    /// Write one JSON line per request: provider, queue wait, fault, when it was read and when its first token was sent (in the handler, and at the socket: `wire_*`).
    #[arg(long, value_name = "FILE")]
    truth_log: Option<PathBuf>,
    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Open connections at most; further clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMITS.max_connections)]
    max_connections: usize,
    /// Close a connection that has sent no complete request head (or TLS handshake) this long
    /// after opening or after its previous response.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_LIMITS.header_read.as_millis() as u64)]
    header_read_timeout_ms: u64,
    /// Close a connection on which no byte moves either way for this long (a `stall` fault
    /// longer than this is cut here).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_LIMITS.idle.as_millis() as u64)]
    idle_timeout_ms: u64,
}

fn millis(what: &str, ms: f64) -> anyhow::Result<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        anyhow::bail!("{what} must be a non-negative number of milliseconds, got {ms}");
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// The profile from `--profile` (or the built-in one), with explicit timing
/// flags applied.
fn load_profile(a: &EmulateArgs) -> anyhow::Result<Profile> {
    let mut profile = match &a.profile {
        None => Profile::builtin(),
        Some(path) => {
            let src = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the profile {}", path.display()))?;
            Profile::from_toml(&src, &path.display().to_string())?
        }
    };
    if let Some(ms) = a.ttft_ms {
        profile.pin_ttft(millis("--ttft-ms", ms)?);
    }
    if let Some(ms) = a.itl_ms {
        profile.pin_itl(millis("--itl-ms", ms)?);
    }
    if let Some(n) = a.tokens {
        profile.pin_tokens(n);
    }
    Ok(profile)
}

fn describe(p: &Profile) -> String {
    let names: Vec<String> = p
        .order
        .iter()
        .map(|&i| {
            let q = &p.providers[i];
            format!(
                "{} ({:.0} tokens/s)",
                q.name,
                1.0 / q.itl.as_secs_f64().max(1e-9)
            )
        })
        .collect();
    names.join(", ")
}

/// Serve until Ctrl-C or SIGTERM.
pub async fn run(a: EmulateArgs) -> anyhow::Result<ExitCode> {
    if a.print_profile {
        out!("{}", firsttoken_emulator::DEFAULT_PROFILE_TOML);
        return Ok(ExitCode::SUCCESS);
    }
    let profile = load_profile(&a)?;
    let truth = match &a.truth_log {
        Some(p) => TruthLog::to_file(p)?,
        None => TruthLog::disabled(),
    };
    let summary = describe(&profile);
    let settings = Settings {
        model: a.model,
        truth,
        profile: Some(profile),
        seed: a.seed,
        serial: a.serial,
        ttft_per_input_token: millis("--ttft-per-input-token-ms", a.ttft_per_input_token_ms)?,
        ..Settings::default()
    };
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => {
            let cert = std::fs::read(c).with_context(|| format!("cannot read {}", c.display()))?;
            let key = std::fs::read(k).with_context(|| format!("cannot read {}", k.display()))?;
            Some(tls_server_config(&cert, &key)?)
        }
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (is another server using it? try --listen 127.0.0.1:0)",
                a.listen
            )
        })?;
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    outln!("listening on {scheme}://{addr}");
    eprintln!(
        "emulator: providers {summary}; seed {}{}; POST {scheme}://{addr}/v1/chat/completions; Ctrl-C stops",
        a.seed,
        if a.serial { "; serial" } else { "" },
    );
    let shutdown = crate::shutdown_token();
    let limits = Limits {
        max_connections: a.max_connections,
        header_read: Duration::from_millis(a.header_read_timeout_ms),
        idle: Duration::from_millis(a.idle_timeout_ms),
    };
    serve_with(listener, app(settings), tls, limits, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
