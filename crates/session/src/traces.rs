//! Collecting the app's spans while a session runs (`[traces] listen`):
//! the OTLP/HTTP receiver of `firsttoken-collect` listens from before the
//! first request until a grace period after the last one (also after
//! Ctrl-C: what arrived is kept), keeps the spans of the session's own
//! trace ids, and a writer task stores them in batches up to the span cap.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use firsttoken_collect::{Collector, CollectorConfig, TraceRegistry};
use firsttoken_plan::config::TracesSection;
use firsttoken_record::Store;
use firsttoken_record::span::SpanRow;
use firsttoken_record::store::SpansAppended;

use crate::SessionError;

/// Spans written to the store in one transaction, at most (plus one
/// export request's worth).
const BATCH: usize = 512;
/// A partial batch waits at most this long before it is written.
const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// Export requests waiting to be stored before the receiver waits.
const QUEUE: usize = 64;
/// Longest wait for requests in flight once the receiver stops.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What span collection did in a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceOutcome {
    /// Where the receiver listened.
    pub listen: Option<SocketAddr>,
    /// Spans stored.
    pub stored: u64,
    /// Spans of the session's traces not stored because the session's
    /// span cap ([`TraceOutcome::cap`]) was reached.
    pub refused_by_cap: u64,
    /// The span cap.
    pub cap: usize,
    /// Spans sent again (same trace and span id) and stored once.
    pub duplicate: u64,
    /// Spans of traces the session did not send: counted, not stored.
    pub not_ours: u64,
    /// Spans with a missing or malformed id.
    pub malformed: u64,
    /// Export requests refused (too large, not OTLP).
    pub refused_requests: u64,
    /// Spans lost because the store failed, with its error.
    pub lost: u64,
    /// The store's error, when writing spans failed.
    pub store_error: Option<String>,
}

impl TraceOutcome {
    /// True when spans were refused because the cap was reached.
    pub fn cap_hit(&self) -> bool {
        self.refused_by_cap > 0
    }
}

/// A span receiver for a session that `run_session` does not drive (a
/// browser session: `firsttoken browse --store --otlp-listen`): the same
/// receiver and writer, the caller naming each trace id it sends before
/// the request goes out.
pub struct SpanReceiver {
    running: Running,
    registry: TraceRegistry,
}

impl SpanReceiver {
    /// Binds `cfg.listen` and starts receiving for session `session_id`;
    /// `None` when `cfg` has no address.
    pub async fn start(
        cfg: &TracesSection,
        store: &Store,
        session_id: &str,
    ) -> Result<Option<SpanReceiver>, SessionError> {
        let Some(listener) = bind(cfg).await? else {
            return Ok(None);
        };
        let registry = TraceRegistry::new();
        let running = start(listener, cfg, store, session_id, registry.clone());
        Ok(Some(SpanReceiver { running, registry }))
    }

    /// Where it listens.
    pub fn listen(&self) -> Option<SocketAddr> {
        self.running.listen
    }

    /// Keep the spans of `trace_id` (32 hex digits) from now on.
    pub fn expect(&self, trace_id: &str) {
        self.registry.insert_hex(trace_id);
    }

    /// Waits the grace period, stores what arrived and returns the counts.
    pub async fn finish(self) -> TraceOutcome {
        self.running.finish().await
    }
}

/// Binds the receiver's address, before anything is created or sent.
pub(crate) async fn bind(cfg: &TracesSection) -> Result<Option<TcpListener>, SessionError> {
    let Some(addr) = &cfg.listen else {
        return Ok(None);
    };
    TcpListener::bind(addr.as_str())
        .await
        .map(Some)
        .map_err(|source| SessionError::Listen {
            addr: addr.clone(),
            source,
        })
}

/// A receiver and its writer, running.
pub(crate) struct Running {
    collector: Collector,
    listen: Option<SocketAddr>,
    stop: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
    writer: JoinHandle<Written>,
    /// Tells the writer to store what it has and stop, whether or not a
    /// connection still holds a sender.
    done: CancellationToken,
    grace: Duration,
    cap: usize,
}

#[derive(Debug, Default)]
struct Written {
    appended: SpansAppended,
    lost: u64,
    error: Option<String>,
}

/// Starts the receiver on `listener` for session `session_id`; spans whose
/// trace id is in `registry` are stored in `store`.
pub(crate) fn start(
    listener: TcpListener,
    cfg: &TracesSection,
    store: &Store,
    session_id: &str,
    registry: TraceRegistry,
) -> Running {
    let (tx, rx) = mpsc::channel(QUEUE);
    let collector = Collector::new(session_id, registry, tx, CollectorConfig::default());
    let listen = listener.local_addr().ok();
    let stop = CancellationToken::new();
    let server = tokio::spawn(firsttoken_collect::run(
        listener,
        collector.clone(),
        stop.clone(),
    ));
    let cap = cfg.max_spans();
    let done = CancellationToken::new();
    let writer = tokio::spawn(write(
        store.clone(),
        session_id.to_string(),
        rx,
        cap,
        done.clone(),
    ));
    Running {
        collector,
        listen,
        stop,
        server,
        writer,
        done,
        grace: cfg.grace(),
        cap,
    }
}

impl Running {
    /// Waits the grace period, stops the receiver, stores what is left and
    /// returns the counts.
    pub(crate) async fn finish(self) -> TraceOutcome {
        tokio::time::sleep(self.grace).await;
        self.stop.cancel();
        let mut server = self.server;
        if tokio::time::timeout(STOP_WAIT, &mut server).await.is_err() {
            // A connection that will not finish (a slow or stuck exporter).
            server.abort();
        }
        // What the handlers handed on is stored; a request still in flight
        // after this finds nobody taking its spans and counts them unsent.
        self.done.cancel();
        let written = self.writer.await.unwrap_or_else(|e| Written {
            error: Some(format!("the span writer stopped: {e}")),
            ..Written::default()
        });
        let counts = self.collector.counts();
        TraceOutcome {
            listen: self.listen,
            stored: written.appended.stored,
            refused_by_cap: written.appended.refused,
            cap: self.cap,
            duplicate: written.appended.duplicate,
            not_ours: counts.not_ours,
            malformed: counts.malformed,
            refused_requests: counts.refused_requests,
            lost: written.lost + counts.unsent,
            store_error: written.error,
        }
    }
}

/// Stores the spans received on `rx` in batches, until it closes or
/// `done`: then what is already queued is stored and the queue closed.
async fn write(
    store: Store,
    session_id: String,
    mut rx: mpsc::Receiver<Vec<SpanRow>>,
    cap: usize,
    done: CancellationToken,
) -> Written {
    let mut out = Written::default();
    let mut buf: Vec<SpanRow> = Vec::new();
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    loop {
        tokio::select! {
            got = rx.recv() => match got {
                Some(spans) => {
                    buf.extend(spans);
                    if buf.len() >= BATCH {
                        flush(&store, &session_id, &mut buf, cap, &mut out).await;
                    }
                }
                None => break,
            },
            () = done.cancelled() => {
                rx.close();
                while let Some(spans) = rx.recv().await {
                    buf.extend(spans);
                    if buf.len() >= BATCH {
                        flush(&store, &session_id, &mut buf, cap, &mut out).await;
                    }
                }
                break;
            }
            _ = tick.tick() => {
                if !buf.is_empty() {
                    flush(&store, &session_id, &mut buf, cap, &mut out).await;
                }
            }
        }
    }
    flush(&store, &session_id, &mut buf, cap, &mut out).await;
    out
}

async fn flush(
    store: &Store,
    session_id: &str,
    buf: &mut Vec<SpanRow>,
    cap: usize,
    out: &mut Written,
) {
    if buf.is_empty() {
        return;
    }
    let n = buf.len() as u64;
    if out.error.is_some() {
        out.lost += n;
    } else if out.appended.refused > 0 {
        // The cap was reached: nothing more can be stored.
        out.appended.refused += n;
    } else {
        match store.append_spans(session_id, buf, cap).await {
            Ok(a) => out.appended.add(a),
            Err(e) => {
                out.error = Some(e.to_string());
                out.lost += n;
            }
        }
    }
    buf.clear();
}
