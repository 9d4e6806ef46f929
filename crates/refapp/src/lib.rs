//! The reference streaming LLM app: a small but real chat backend, written
//! the way a careful Rust team would (axum, tokio, a pooled upstream client,
//! SQLite or PostgreSQL), so firsttoken has an honest system to measure.
//! It depends on none of firsttoken's crates.
//!
//! Routes:
//! - `POST /api/auth/signup`, `POST /api/auth/login`: `{"email", "password"}`
//!   → `{"user_id", "email", "token", "token_type": "bearer", "expires_at"}`.
//! - `POST /api/chat` (fast path), `POST /api/docs/ask` (BM25 retrieval over a
//!   bundled corpus), `POST /api/message` (routed by [`route::decide`]):
//!   `{"conversation_id"?: int, "message": string}` with a bearer token →
//!   an SSE stream of OpenAI `chat.completion.chunk`s.
//! - `GET /api/conversations/{id}/messages`, `GET /health`, `GET /version`.
//! - `GET /chat`: a chat page (one HTML file, plain JavaScript) streaming
//!   `/api/chat` into the page, with known-bad render modes.
//! - `DELETE /api/admin/users/{id}` with the admin token (`admin_token`)
//!   → 204 (404: no such user); a user's token gets 403, none 401. With
//!   `signup_limit`, sign-up closes (403) after that many accounts.
//!
//! Every answer carries `Server-Timing` (`auth`, `db` with their database
//! round trips as `desc="N rt"`, `retrieve`, `upstream_connect`: what
//! happened before the stream), `X-Route`,
//! `X-Request-Id`, and ends with `event: server-timing` (`upstream_ttft`,
//! `stream`, `store`, `total`) after `data: [DONE]`; with
//! `process_time_header`, also `X-Process-Time` (seconds to the response
//! head, a float, as FastAPI apps send it).
//!
//! Known-bad modes, all off by default, reproduce common latency mistakes:
//! serial handling, blocking database calls on the runtime, extra database
//! round trips, a database connection per call, buffering the whole answer,
//! a cold start after idling and a keyword router. A modelled network to
//! the database (`db_rtt`) gives database calls the cost they have against
//! a hosted PostgreSQL; `tls` serves HTTPS (a throwaway CA, or PEM files).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use firsttoken_refapp::{Config, Options, run};
//! let config = Config::new(Options {
//!     database_url: "/tmp/refapp.db".into(),
//!     upstream_url: "http://127.0.0.1:8089/v1".into(),
//!     ..Options::default()
//! })?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8090").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! run(listener, config, shutdown).await?;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod answer;
mod api;
mod auth;
pub mod config;
mod http;
mod page;
mod remote;
pub mod retrieve;
pub mod route;
mod server;
pub mod store;
mod telemetry;
mod tls;
mod upstream;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub use config::{
    Config, ConfigError, Database, DbFaultScope, KnownBad, Options, PageBuffer, TlsSource,
};
pub use retrieve::DocIndex;
pub use route::RouterRule;
pub use store::{Store, StoreError, StoreOptions};
pub use telemetry::{DEFAULT_EXPORT_DELAY, SERVICE_NAME, TelemetryError};
pub use tls::TlsError;

/// The git revision the crate was built from (`unknown` without git).
pub const GIT_REVISION: &str = env!("FIRSTTOKEN_REFAPP_GIT_REVISION");

/// The app cannot start or serve.
#[derive(Debug, thiserror::Error)]
pub enum RefappError {
    /// A setting is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database cannot be opened or migrated.
    #[error("cannot open the database {target}: {cause}")]
    Store {
        /// The database (password redacted).
        target: String,
        /// Why (in the message, not chained, so it is printed once).
        cause: StoreError,
    },
    /// The upstream HTTP client cannot be built (e.g. no TLS roots).
    #[error("cannot build the upstream HTTP client: {0}")]
    Client(String),
    /// The app's TLS certificate cannot be generated, read or written.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The OTLP trace exporter cannot be built.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
    /// Accepting connections failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

struct Shared {
    config: Config,
    store: Store,
    upstream: upstream::Upstream,
    index: DocIndex,
    serial: Option<Arc<Semaphore>>,
    cold: Option<ColdStart>,
    hashing: auth::HashGate,
    db: remote::DbLink,
    tls: Option<tls::Edge>,
    telemetry: Option<telemetry::Telemetry>,
    /// Sign-ups accepted so far (for `signup_limit`).
    signups: std::sync::atomic::AtomicU64,
}

struct ColdStart {
    delay: Duration,
    idle: Duration,
    last: Mutex<Option<Instant>>,
}

/// The app's state: configuration, store, upstream client, document index.
/// Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Shared>,
}

impl AppState {
    /// Open the store (running migrations), build the upstream client and
    /// the document index.
    pub async fn new(config: Config) -> Result<AppState, RefappError> {
        let store = Store::open(
            config.database(),
            StoreOptions {
                timeout: config.options.db_timeout,
                // Per caller: the answer paths pick their own access.
                blocking: remote::DbLink::new(&config).shared().blocking,
            },
        )
        .await
        .map_err(|cause| RefappError::Store {
            target: config.database().redacted(),
            cause,
        })?;
        Self::with_store(config, store)
    }

    /// Like [`AppState::new`] with a store opened by the caller. With TLS
    /// on, the certificate is loaded or generated here (and a generated CA
    /// written out).
    pub fn with_store(config: Config, store: Store) -> Result<AppState, RefappError> {
        let tls = config.options.tls.as_ref().map(tls::edge).transpose()?;
        let upstream =
            upstream::Upstream::new(&config).map_err(|e| RefappError::Client(e.to_string()))?;
        let kb = config.known_bad;
        let o = &config.options;
        let hashing = auth::HashGate::new(o.hash_concurrency, o.hash_queue, o.hash_queue_timeout);
        let version = o.version_label.as_deref().unwrap_or(GIT_REVISION);
        let telemetry = o
            .otlp_endpoint
            .as_deref()
            .map(|e| telemetry::Telemetry::new(e, version))
            .transpose()?;
        Ok(AppState {
            inner: Arc::new(Shared {
                serial: kb.serial.then(|| Arc::new(Semaphore::new(1))),
                cold: kb.cold_start.map(|(delay, idle)| ColdStart {
                    delay,
                    idle,
                    last: Mutex::new(None),
                }),
                hashing,
                db: remote::DbLink::new(&config),
                tls,
                telemetry,
                signups: Default::default(),
                index: DocIndex::bundled(),
                upstream,
                store,
                config,
            }),
        })
    }

    /// The store, e.g. for a test to look at or clean up what was written.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The PEM certificate of the CA generated for
    /// [`TlsSource::SelfSigned`], for clients to trust.
    pub fn tls_ca_pem(&self) -> Option<&str> {
        self.inner.tls.as_ref()?.ca_pem.as_deref()
    }

    /// The server span of a request taken now (a no-op span without
    /// `otlp_endpoint`).
    fn server_span(
        &self,
        headers: &axum::http::HeaderMap,
        method: &str,
        path: &str,
    ) -> telemetry::Traced {
        match &self.inner.telemetry {
            Some(t) => t.server_span(headers, method, path),
            None => telemetry::Traced::default(),
        }
    }

    /// `db.system.name` of the app's database.
    fn db_system(&self) -> &'static str {
        match self.inner.config.database() {
            Database::Sqlite(_) => "sqlite",
            Database::Postgres(_) => "postgresql",
        }
    }

    /// Export the spans still queued (blocking; called once serving ended).
    fn flush_telemetry(&self) {
        if let Some(t) = &self.inner.telemetry {
            t.shutdown();
        }
    }

    /// Pay the modelled network cost of one database call made outside the
    /// answer paths (accounts, auth, health).
    async fn db_call(&self) {
        let db = &self.inner.db;
        db.call(db.shared(), &mut 0).await;
    }

    /// With `--serial`, the one permit (waits for it); otherwise `None`.
    async fn serial_permit(&self) -> Option<OwnedSemaphorePermit> {
        let sem = self.inner.serial.clone()?;
        // The semaphore is never closed, so acquiring only waits.
        sem.acquire_owned().await.ok()
    }

    /// With `--cold-start-ms`, the delay owed by a request arriving now.
    fn cold_start_delay(&self) -> Option<Duration> {
        let cold = self.inner.cold.as_ref()?;
        let now = Instant::now();
        let mut last = cold.last.lock().unwrap_or_else(|e| e.into_inner());
        let idle = last.is_none_or(|t| now.duration_since(t) >= cold.idle);
        *last = Some(now);
        idle.then_some(cold.delay)
    }

    /// Mark activity (an answer finished), for the cold-start idle clock:
    /// a long stream keeps the app warm.
    fn touch(&self) {
        if let Some(cold) = &self.inner.cold {
            *cold.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }
}

/// The app's routes.
pub fn app(state: AppState) -> Router {
    let limit = state.inner.config.options.max_body_bytes;
    Router::new()
        .route("/api/auth/signup", post(api::signup))
        .route("/api/auth/login", post(api::login))
        .route("/api/chat", post(answer::chat))
        .route("/api/docs/ask", post(answer::docs_ask))
        .route("/api/message", post(answer::message))
        .route("/api/conversations", post(api::create_conversation))
        .route(
            "/api/conversations/{id}/messages",
            get(api::conversation_messages),
        )
        .route(
            "/api/admin/users/{id}",
            axum::routing::delete(api::admin_delete_user),
        )
        .route("/chat", get(page::chat_page))
        .route("/health", get(api::health))
        .route("/version", get(api::version))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::stamp,
        ))
        .with_state(state)
}

/// Serve `state` on `listener` until `shutdown` is cancelled, then let open
/// requests finish. Connections are bounded (`max_connections`), must send
/// their request heads in time (`header_read_timeout`) and are closed when
/// silent for too long (`idle_timeout`); see [`Options`]. With `tls`, every
/// connection is HTTPS. With `worker_threads`, the app runs on a runtime of
/// its own with that many workers, on a thread of its own.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> Result<(), RefappError> {
    let Some(workers) = state.inner.config.options.worker_threads else {
        return server::serve(listener, state, shutdown).await;
    };
    // The socket moves to the new runtime's reactor.
    let listener = listener.into_std()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("refapp-runtime".into())
        .spawn(move || {
            let r = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("refapp-worker")
                .enable_all()
                .build()
                .map_err(RefappError::Io)
                .and_then(|rt| {
                    rt.block_on(async {
                        let listener = TcpListener::from_std(listener)?;
                        server::serve(listener, state, shutdown).await
                    })
                });
            let _ = tx.send(r);
        })?;
    rx.await.unwrap_or_else(|_| {
        Err(RefappError::Io(std::io::Error::other(
            "the app's runtime thread ended without a result",
        )))
    })
}

/// Open everything for `config`, then [`serve`] until `shutdown`.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: CancellationToken,
) -> Result<(), RefappError> {
    let state = AppState::new(config).await?;
    serve(listener, state, shutdown).await
}
