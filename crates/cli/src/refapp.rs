//! `firsttoken refapp`: the reference streaming LLM app as a server.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use firsttoken_refapp::{
    AppState, Config, DbFaultScope, Options, PageBuffer, RouterRule, TlsSource, serve,
};

#[derive(Debug, Args)]
#[command(
    after_help = "Routes: POST /api/auth/signup, /api/auth/login ({\"email\", \"password\"});
POST /api/chat, /api/docs/ask, /api/message ({\"conversation_id\"?, \"message\"}, bearer token, SSE);
GET /api/conversations/{id}/messages, /health, /version; DELETE /api/admin/users/{id} (the admin token).
The first line on stdout is the address it listens on, e.g. `listening on http://127.0.0.1:8090`.
Known-bad modes (--serial, --blocking-db, --db-roundtrips, --buffered, --cold-start-ms) are off by default."
)]
pub struct RefappArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: SocketAddr,
    /// A SQLite file path (or sqlite://PATH), or postgres://user@host:port/db.
    #[arg(long, value_name = "URL", default_value = "./firsttoken-refapp.db")]
    database_url: String,
    /// Base URL of an OpenAI-compatible API (`/chat/completions` is appended).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8089/v1")]
    upstream_url: String,
    /// Name of the environment variable holding the upstream API key (the key is never logged).
    #[arg(long, value_name = "NAME")]
    upstream_key_env: Option<String>,
    /// Model name sent upstream.
    #[arg(long, default_value = "emulated-model")]
    model: String,
    /// Provider preference sent as "provider": {"order": [...]} (OpenRouter style).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    provider_order: Vec<String>,
    /// What GET /version reports instead of the git revision the app was built from.
    #[arg(long, value_name = "LABEL")]
    version_label: Option<String>,
    /// Largest accepted request body; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024)]
    max_body_bytes: usize,
    /// Passages retrieved per document question.
    #[arg(long, default_value_t = 3)]
    passages: usize,
    /// Recent messages of a conversation put in the prompt.
    #[arg(long, default_value_t = 20)]
    history_limit: u32,
    /// How long a database call may wait for a lock or connection before 503.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    db_timeout_ms: u64,
    /// Longest silence from upstream (before headers or between chunks) before giving up.
    #[arg(long, value_name = "MS", default_value_t = 120_000)]
    upstream_timeout_ms: u64,
    /// Password hashes computed at once (argon2, ~19 MiB each) [default: the number of cores].
    #[arg(long, value_name = "N")]
    hash_concurrency: Option<usize>,
    /// Sign-ups and logins that may wait for a hashing slot; more get 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 64)]
    hash_queue: usize,
    /// How long a sign-up or login waits for a hashing slot before 503.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    hash_queue_timeout_ms: u64,
    /// Close a connection that has not sent a complete request head this long after opening
    /// or after its previous response (also the keep-alive idle limit).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    header_read_timeout_ms: u64,
    /// Close a connection on which no byte moves either way for this long (must exceed
    /// --upstream-timeout-ms).
    #[arg(long, value_name = "MS", default_value_t = 180_000)]
    idle_timeout_ms: u64,
    /// A request body must arrive whole this long after its head, else 408 (a body trickled
    /// byte by byte cannot hold a connection).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    body_read_timeout_ms: u64,
    /// Open connections at most; further clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// Known-bad: handle one request at a time.
    #[arg(long)]
    serial: bool,
    /// Known-bad: run SQLite calls synchronously on the async worker threads.
    #[arg(long)]
    blocking_db: bool,
    /// Known-bad: make N extra sequential database queries before streaming.
    #[arg(long, value_name = "N", default_value_t = 0)]
    db_roundtrips: u32,
    /// Known-bad: no streaming; send the whole answer at once.
    #[arg(long)]
    buffered: bool,
    /// Known-bad: delay a request by MS when the app has been idle (and the first one).
    #[arg(long, value_name = "MS")]
    cold_start_ms: Option<u64>,
    /// How long without requests counts as idle for --cold-start-ms.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 30_000,
        requires = "cold_start_ms"
    )]
    cold_start_idle_ms: u64,
    /// The modelled network to the database: every database call first waits this round-trip time (0: the database is as close as its file). See docs/REFAPP.md.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    db_rtt_ms: u64,
    /// Known-bad: a new database connection per call (no pool), each paying --db-handshake-rtts extra round trips.
    #[arg(long)]
    db_connect_per_call: bool,
    /// Round trips of one new database connection (TCP 1, TLS 1.3 1, password authentication 2).
    #[arg(long, value_name = "N", default_value_t = 4)]
    db_handshake_rtts: u32,
    /// Where the known-bad database modes apply: every call, or the chat path only (auth and the document path stay pooled and async).
    #[arg(long, value_enum, default_value_t = DbFaults::All)]
    db_faults: DbFaults,
    /// How /api/message picks a path: by document keywords only (the known-bad router) or also by the corpus's names and a strong retrieval hit.
    #[arg(long, value_enum, default_value_t = Router::Keywords)]
    router: Router,
    /// Run the app on its own runtime with N worker threads (one is a one-vCPU container: a worker held by --blocking-db holds the whole app).
    #[arg(long, value_name = "N")]
    worker_threads: Option<usize>,
    /// Serve HTTPS with a throwaway CA and a leaf for localhost and 127.0.0.1, made at start.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    tls_self_signed: bool,
    /// With --tls-self-signed: write the CA certificate (PEM) here, for clients' --cacert.
    #[arg(long, value_name = "FILE", requires = "tls_self_signed")]
    tls_ca_out: Option<std::path::PathBuf>,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Export the app's OpenTelemetry spans (auth, each database call, retrieval, the provider call) over OTLP/HTTP to this base URL; `/v1/traces` is appended. `OTEL_SERVICE_NAME` and `OTEL_BSP_SCHEDULE_DELAY` are honoured (default export delay 200 ms).
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// Send X-Process-Time on every response: the seconds (a float) from the request's arrival to its response head, as FastAPI apps (Open WebUI) send it.
    #[arg(long)]
    process_time_header: bool,
    /// Name of the environment variable holding the admin token DELETE /api/admin/users/{id} accepts (never logged; unset: that endpoint refuses every request).
    #[arg(long, value_name = "NAME")]
    admin_token_env: Option<String>,
    /// Accept this many sign-ups, then answer 403 (sign-up closed) while sign-in goes on.
    #[arg(long, value_name = "N")]
    signup_limit: Option<u64>,
    /// Known-bad front end: the chat page (GET /chat) spends MS of main-thread work per render, re-rendering the whole message on every token.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    page_render_delay_ms: f64,
    /// Known-bad front end: the chat page shows nothing until N content tokens have arrived, or until the answer ends (`end`).
    #[arg(long, value_name = "N|end", value_parser = parse_page_buffer)]
    page_buffer: Option<PageBuffer>,
}

/// `--page-buffer`: a token count or `end`.
fn parse_page_buffer(s: &str) -> Result<PageBuffer, String> {
    if s == "end" {
        return Ok(PageBuffer::End);
    }
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(PageBuffer::Tokens(n)),
        _ => Err(format!(
            "expected a token count above 0 or `end`, got {s:?}"
        )),
    }
}

/// `--db-faults`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DbFaults {
    /// Every database call.
    All,
    /// The chat path's calls only.
    Chat,
}

/// `--router`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Router {
    /// Document keywords only (known-bad).
    Keywords,
    /// Keywords, corpus names or a strong retrieval hit.
    Corpus,
}

/// Validated `refapp` arguments.
struct RefappSpec {
    listen: SocketAddr,
    config: Config,
}

impl TryFrom<RefappArgs> for RefappSpec {
    type Error = anyhow::Error;

    fn try_from(a: RefappArgs) -> anyhow::Result<Self> {
        let upstream_key = match &a.upstream_key_env {
            None => None,
            Some(name) => match std::env::var(name) {
                Ok(k) if !k.trim().is_empty() => Some(k),
                _ => anyhow::bail!(
                    "--upstream-key-env {name}: the environment variable {name} is not set or empty"
                ),
            },
        };
        let admin_token = match &a.admin_token_env {
            None => None,
            Some(name) => match std::env::var(name) {
                Ok(k) if !k.trim().is_empty() => Some(k),
                _ => anyhow::bail!(
                    "--admin-token-env {name}: the environment variable {name} is not set or empty"
                ),
            },
        };
        if !(a.page_render_delay_ms.is_finite() && a.page_render_delay_ms >= 0.0) {
            anyhow::bail!(
                "--page-render-delay-ms: expected a non-negative number of milliseconds, got {}",
                a.page_render_delay_ms
            );
        }
        let options = Options {
            page_render_delay: Duration::from_secs_f64(a.page_render_delay_ms / 1000.0),
            page_buffer: a.page_buffer.unwrap_or_default(),
            database_url: a.database_url,
            upstream_url: a.upstream_url,
            upstream_key,
            model: a.model,
            provider_order: a.provider_order,
            version_label: a.version_label,
            max_body_bytes: a.max_body_bytes,
            history_limit: a.history_limit,
            passages: a.passages,
            db_timeout: Duration::from_millis(a.db_timeout_ms),
            upstream_read_timeout: Duration::from_millis(a.upstream_timeout_ms),
            hash_concurrency: a
                .hash_concurrency
                .unwrap_or(Options::default().hash_concurrency),
            hash_queue: a.hash_queue,
            hash_queue_timeout: Duration::from_millis(a.hash_queue_timeout_ms),
            header_read_timeout: Duration::from_millis(a.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(a.idle_timeout_ms),
            body_read_timeout: Duration::from_millis(a.body_read_timeout_ms),
            max_connections: a.max_connections,
            serial: a.serial,
            blocking_db: a.blocking_db,
            db_roundtrips: a.db_roundtrips,
            buffered: a.buffered,
            cold_start: a.cold_start_ms.map(Duration::from_millis),
            cold_start_idle: Duration::from_millis(a.cold_start_idle_ms),
            db_rtt: Duration::from_millis(a.db_rtt_ms),
            db_connect_per_call: a.db_connect_per_call,
            db_handshake_rtts: a.db_handshake_rtts,
            db_fault_scope: match a.db_faults {
                DbFaults::All => DbFaultScope::AllPaths,
                DbFaults::Chat => DbFaultScope::ChatPath,
            },
            router: match a.router {
                Router::Keywords => RouterRule::Keywords,
                Router::Corpus => RouterRule::Corpus,
            },
            worker_threads: a.worker_threads,
            otlp_endpoint: a.otlp_endpoint.filter(|e| !e.trim().is_empty()),
            process_time_header: a.process_time_header,
            admin_token,
            signup_limit: a.signup_limit,
            tls: match (a.tls_self_signed, a.tls_cert, a.tls_key) {
                (true, _, _) => Some(TlsSource::SelfSigned {
                    ca_out: a.tls_ca_out,
                }),
                (false, Some(cert), Some(key)) => Some(TlsSource::Files { cert, key }),
                _ => None,
            },
            ..Options::default()
        };
        Ok(RefappSpec {
            listen: a.listen,
            config: Config::new(options)?,
        })
    }
}

/// Serve until Ctrl-C or SIGTERM.
pub async fn run(args: RefappArgs) -> anyhow::Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let RefappSpec { listen, config } = RefappSpec::try_from(args)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {listen} (is another server using it? try --listen 127.0.0.1:0)"
            )
        })?;
    let addr = listener.local_addr()?;
    let summary = format!(
        "refapp: database {}, upstream {} (model {}), known-bad modes: {}{}",
        config.database().redacted(),
        config.chat_completions_url(),
        config.options().model,
        known_bad(&config),
        match &config.options().otlp_endpoint {
            Some(e) => format!(
                "; spans over OTLP/HTTP to {}/v1/traces",
                e.trim_end_matches('/')
            ),
            None => String::new(),
        }
    );
    let tls = config.options().tls.is_some();
    let state = AppState::new(config).await?;
    let scheme = if tls { "https" } else { "http" };
    outln!("listening on {scheme}://{addr}");
    eprintln!("{summary}; Ctrl-C stops");
    let shutdown = crate::shutdown_token();
    serve(listener, state, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

fn known_bad(config: &Config) -> String {
    let kb = config.known_bad();
    let mut on = Vec::new();
    if kb.serial {
        on.push("serial".to_string());
    }
    if kb.blocking_db {
        on.push("blocking-db".into());
    }
    if kb.db_roundtrips > 0 {
        on.push(format!("db-roundtrips {}", kb.db_roundtrips));
    }
    if kb.db_connect_per_call {
        on.push("db-connect-per-call".into());
    }
    if kb.db_fault_scope == DbFaultScope::ChatPath
        && (kb.blocking_db || kb.db_roundtrips > 0 || kb.db_connect_per_call)
    {
        on.push("(database modes on the chat path only)".into());
    }
    if kb.buffered {
        on.push("buffered".into());
    }
    if let Some((delay, idle)) = kb.cold_start {
        on.push(format!(
            "cold-start {} ms after {} ms idle",
            delay.as_millis(),
            idle.as_millis()
        ));
    }
    if !kb.page_render_delay.is_zero() {
        on.push(format!(
            "page render delay {} ms",
            kb.page_render_delay.as_secs_f64() * 1000.0
        ));
    }
    match kb.page_buffer {
        PageBuffer::Off => {}
        PageBuffer::Tokens(n) => on.push(format!("page buffers {n} tokens")),
        PageBuffer::End => on.push("page buffers to the end".into()),
    }
    if on.is_empty() {
        "none".into()
    } else {
        on.join(", ")
    }
}
