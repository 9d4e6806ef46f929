//! The truth log: for every request, when the emulator read it, how long it
//! queued, which provider served it (and which were tried before), which
//! fault was applied, and when it handed its first and last content token to
//! the connection, as JSON lines. Written by a dedicated thread so the async
//! workers never block on disk.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use serde::Serialize;

use crate::EmulatorError;

/// One request as the emulator saw it. Times are milliseconds since the
/// emulator started, on its monotonic clock.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TruthRecord {
    /// The `x-request-id` the response carried.
    pub request_id: String,
    /// Request path.
    pub path: String,
    /// Whether the response streamed.
    pub stream: bool,
    /// Request fully read (headers and body).
    pub read_ms: f64,
    /// Wire-level arrival: the kernel's receive time of the read that
    /// completed the request (`None`: no kernel stamp, or a connection not
    /// accepted by [`crate::serve`]); see [`crate::wire`].
    pub wire_read_ms: Option<f64>,
    /// Wire-level departure of the first content token: when the write that
    /// carried it began (`None`: not written, a reply that did not stream, or
    /// not through [`crate::serve`]).
    pub wire_first_token_ms: Option<f64>,
    /// `wire_first_token_ms − wire_read_ms`: the server's time to first
    /// token at its socket, the truth a client's TTFT is judged against.
    pub wire_ttft_ms: Option<f64>,
    /// First content token handed to the connection.
    pub first_token_ms: Option<f64>,
    /// Last content token handed to the connection.
    pub last_token_ms: Option<f64>,
    /// `first_token_ms − read_ms`: the server-side time to first token.
    pub ttft_ms: Option<f64>,
    /// Content tokens sent.
    pub tokens_sent: u32,
    /// Content tokens planned.
    pub tokens_planned: u32,
    /// The TTFT the emulator aimed for.
    pub target_ttft_ms: f64,
    /// The inter-token interval it aimed for.
    pub target_itl_ms: f64,
    /// True when the response ran to its end (false: the client went away,
    /// or a fault cut it short).
    pub completed: bool,
    /// The HTTP status sent.
    pub status: u16,
    /// The provider that served the response (`None`: none did).
    pub provider: Option<String>,
    /// Every provider tried, in order, with the fault each met; more than
    /// one means fallbacks.
    pub attempts: Vec<Attempt>,
    /// The fault applied to the response the client got (the last attempt),
    /// by its `x-emulator-fault` name; `None`: none.
    pub fault: Option<String>,
    /// Time spent queued behind serial-mode locks before processing started.
    pub queue_wait_ms: f64,
    /// Extra time to first token from a cold start (0: warm).
    pub cold_start_ms: f64,
    /// Prompt tokens reported in usage.
    pub prompt_tokens: u32,
    /// Cost reported in usage, USD (`None`: no usage was sent).
    pub cost_usd: Option<f64>,
}

/// One routing attempt.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Attempt {
    /// The provider tried.
    pub provider: String,
    /// The fault it met, by name; `None`: none.
    pub fault: Option<String>,
}

/// Where truth records go. Cloning shares the writer.
#[derive(Debug, Clone)]
pub struct TruthLog {
    origin: Instant,
    tx: Option<mpsc::Sender<TruthRecord>>,
}

impl TruthLog {
    /// A log that records nothing (its clock still runs, for timing).
    pub fn disabled() -> TruthLog {
        TruthLog {
            origin: Instant::now(),
            tx: None,
        }
    }

    /// Append records to `path` (created or truncated), one JSON object a line,
    /// flushed after each.
    pub fn to_file(path: &Path) -> Result<TruthLog, EmulatorError> {
        let file = std::fs::File::create(path).map_err(|source| EmulatorError::TruthLog {
            path: path.display().to_string(),
            source,
        })?;
        let (tx, rx) = mpsc::channel::<TruthRecord>();
        std::thread::Builder::new()
            .name("truth-log".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(file);
                for rec in rx {
                    let line = serde_json::to_string(&rec).unwrap_or_default();
                    if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                        break;
                    }
                }
            })
            .map_err(|source| EmulatorError::TruthLog {
                path: path.display().to_string(),
                source,
            })?;
        Ok(TruthLog {
            origin: Instant::now(),
            tx: Some(tx),
        })
    }

    /// A log kept in memory: every record is sent to the returned receiver
    /// (for tests and embedding programs).
    pub fn in_memory() -> (TruthLog, mpsc::Receiver<TruthRecord>) {
        let (tx, rx) = mpsc::channel::<TruthRecord>();
        (
            TruthLog {
                origin: Instant::now(),
                tx: Some(tx),
            },
            rx,
        )
    }

    /// Milliseconds since the log's origin.
    pub fn ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64() * 1000.0
    }

    pub(crate) fn write(&self, rec: TruthRecord) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(rec);
        }
    }
}
