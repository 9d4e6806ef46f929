//! `firsttoken emulate`: the provider emulator as a server.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use firsttoken_emulator::{Settings, TruthLog, app, serve, tls_server_config};

#[derive(Debug, Args)]
#[command(
    after_help = "Per-request overrides: headers x-emulator-ttft-ms, x-emulator-itl-ms, x-emulator-tokens.
The first line on stdout is the address it listens on, e.g. `listening on http://127.0.0.1:8089`."
)]
pub struct EmulateArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8089")]
    listen: SocketAddr,
    /// Time from request read to the first content token, in milliseconds.
    #[arg(long, default_value_t = 200.0)]
    ttft_ms: f64,
    /// Time between content tokens, in milliseconds.
    #[arg(long, default_value_t = 20.0)]
    itl_ms: f64,
    /// Content tokens per response (a request's max_tokens lowers it).
    #[arg(long, default_value_t = 32)]
    tokens: u32,
    /// Model name reported when the request names none.
    #[arg(long, default_value = "emulated-model")]
    model: String,
    /// Write one JSON line per request: when it was read and when its first token was sent.
    #[arg(long, value_name = "FILE")]
    truth_log: Option<std::path::PathBuf>,
    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
}

fn millis(what: &str, ms: f64) -> anyhow::Result<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        anyhow::bail!("{what} must be a non-negative number of milliseconds, got {ms}");
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// Serve until Ctrl-C or SIGTERM.
pub async fn run(a: EmulateArgs) -> anyhow::Result<ExitCode> {
    let truth = match &a.truth_log {
        Some(p) => TruthLog::to_file(p)?,
        None => TruthLog::disabled(),
    };
    let settings = Settings {
        ttft: millis("--ttft-ms", a.ttft_ms)?,
        itl: millis("--itl-ms", a.itl_ms)?,
        tokens: a.tokens,
        model: a.model,
        truth,
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
    println!("listening on {scheme}://{addr}");
    eprintln!(
        "emulator: TTFT {} ms, {} ms between tokens, {} tokens; POST {scheme}://{addr}/v1/chat/completions; Ctrl-C stops",
        a.ttft_ms, a.itl_ms, a.tokens
    );
    let shutdown = crate::shutdown_token();
    serve(listener, app(settings), tls, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
