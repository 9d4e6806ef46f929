//! [`SampleView`]: a stored sample as analysis reads it — the columns it
//! needs, typed, borrowing its text from the row being read.
//!
//! A [`SampleRow`] owns a dozen strings and every stamp a request passed;
//! analysis needs about half of it. The stores read a session's samples
//! straight into views ([`crate::Store::scan_views`]), one row at a time,
//! so a report over a million samples never holds a million rows: the
//! caller folds each view into its own compact table. [`SampleView::of`]
//! gives the same view of a row already in memory, so both paths feed one
//! validation.

use std::borrow::Cow;

use firsttoken_stats::bootstrap::{FNV_OFFSET, fnv1a};

use crate::session::{Provenance, SampleRow};
use crate::vocab::{Destination, PhaseKind, UtcTime};
use crate::{Clock, Connection, EngineTiming, ErrorKind, HandshakeKind};

/// A hash, fixed when this crate is built, of the source that decides what
/// a stored sample reads as: the stored vocabulary (`lib.rs`, `vocab.rs`,
/// `session.rs`) and the views (this file, `store/view.rs`). Whatever is
/// derived from stored samples and kept (a stored frame) names it, so a
/// build whose rules may differ makes it again rather than trust it.
pub const VIEW_SOURCE_HASH: u64 = {
    let mut h = fnv1a(FNV_OFFSET, include_bytes!("lib.rs"));
    h = fnv1a(h, include_bytes!("vocab.rs"));
    h = fnv1a(h, include_bytes!("session.rs"));
    h = fnv1a(h, include_bytes!("view.rs"));
    fnv1a(h, include_bytes!("store/view.rs"))
};

/// The fields of a sample that analysis reads; text borrowed from its
/// row. Times in ms from the request start, `None` when the phase did not
/// happen (not yet validated: a caller refuses negative or non-finite ones).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleView<'r> {
    /// Session it belongs to.
    pub session_id: &'r str,
    /// Position in the session (warm-ups have their own sequence).
    pub seq: u64,
    /// Protocol phase.
    pub phase: PhaseKind,
    /// The stored `path` column as [`Destination::path_column`] gives it
    /// (`direct` for direct requests, `ping` for pings).
    pub path: Option<&'r str>,
    /// The routing strategy (direct requests only).
    pub strategy: Option<&'r str>,
    /// Concurrency level of a concurrency-phase request.
    pub concurrency: Option<u32>,
    /// When it actually started, ms from the session start.
    pub actual_start_ms: f64,
    /// Wall-clock start.
    pub started_at: UtcTime,
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// A warm-up request (shown, not counted).
    pub warmup: bool,
    /// DNS resolution done.
    pub dns_ms: Option<f64>,
    /// TCP connection established.
    pub connect_ms: Option<f64>,
    /// TLS handshake done.
    pub tls_ms: Option<f64>,
    /// First response byte.
    pub ttfb_ms: Option<f64>,
    /// First content token.
    pub ttft_ms: Option<f64>,
    /// First tool call.
    pub ttftc_ms: Option<f64>,
    /// First output of either kind (text or a tool call).
    pub first_output_ms: Option<f64>,
    /// Last content token.
    pub last_token_ms: Option<f64>,
    /// Stream end.
    pub e2e_ms: Option<f64>,
    /// Output tokens per second after the first token.
    pub tokens_per_s: Option<f64>,
    /// Body chunks that carried content.
    pub content_chunks: u64,
    /// The provider that served it, if the stream said.
    pub provider: Option<&'r str>,
    /// The route the app reported.
    pub route: Option<&'r str>,
    /// The app's Server-Timing durations, ms, by name (empty: none sent).
    pub server_timing: Vec<(Cow<'r, str>, f64)>,
    /// Full or resumed TLS handshake, on fresh TLS connections.
    pub handshake: Option<HandshakeKind>,
    /// Why it failed, if it did.
    pub error: Option<ErrorKind>,
    /// The prompt's index in its list and its hash, when recorded.
    pub prompt: Option<(u32, &'r str)>,
    /// The W3C trace id the request sent.
    pub trace_id: Option<&'r str>,
    /// The clock of its arrival stamps.
    pub clock: Option<Clock>,
    /// Client lag at the first content token, ms.
    pub client_lag_ms: Option<f64>,
    /// Stream events that shared the first content token's read.
    pub ttft_read_events: Option<u64>,
    /// In a flow, from the flow's start to the measured request's start, ms.
    pub flow_wait_ms: Option<f64>,
    /// In a flow, each earlier step's name and duration, ms, in order
    /// (empty for a single request).
    pub flow_steps: Vec<(Cow<'r, str>, f64)>,
    /// In a conversation, the turn's number (1 for the first message).
    pub turn: Option<u32>,
    /// In a conversation, the messages it held before the turn.
    pub history_messages: Option<u32>,
    /// In a conversation, the measured request's body size, bytes.
    pub request_bytes: Option<u64>,
    /// Fresh or reused connection.
    pub connection: Connection,
    /// A reused connection was found closed and the request went again on
    /// a new one.
    pub retried_stale: bool,
    /// The engine's own timing, when the stream carried one.
    pub engine: Option<EngineTiming>,
}

impl<'r> SampleView<'r> {
    /// The view of a row in memory.
    pub fn of(row: &'r SampleRow) -> SampleView<'r> {
        let s = &row.sample;
        SampleView {
            session_id: &row.session_id,
            seq: s.seq,
            phase: row.phase,
            path: row.dest.path_column(),
            strategy: row.dest.strategy(),
            concurrency: row.concurrency,
            actual_start_ms: row.actual_start_ms,
            started_at: row.started_at,
            provenance: row.provenance,
            warmup: s.warmup,
            dns_ms: s.dns_ms,
            connect_ms: s.connect_ms,
            tls_ms: s.tls_ms,
            ttfb_ms: s.ttfb_ms,
            ttft_ms: s.ttft_ms,
            ttftc_ms: s.ttftc_ms,
            first_output_ms: s.first_output_ms,
            last_token_ms: s.last_token_ms,
            e2e_ms: s.e2e_ms,
            tokens_per_s: s.tokens_per_s,
            content_chunks: s.content_chunks,
            provider: s.provider.as_deref(),
            route: s.route.as_deref(),
            server_timing: s
                .server_timing
                .iter()
                .flatten()
                .map(|(k, v)| (Cow::Borrowed(k.as_str()), *v))
                .collect(),
            handshake: s.tls.as_ref().and_then(|t| t.handshake),
            error: s.error.as_ref().map(|e| e.kind),
            prompt: row.prompt.as_ref().map(|p| (p.index, p.hash.as_str())),
            trace_id: s.trace_id.as_deref(),
            clock: s.clock,
            client_lag_ms: s.client_lag_ms,
            ttft_read_events: s.ttft_read_events,
            flow_wait_ms: s.flow_wait_ms,
            flow_steps: s
                .flow_steps
                .iter()
                .flatten()
                .map(|t| (Cow::Borrowed(t.name.as_str()), t.ms))
                .collect(),
            turn: s.turn,
            history_messages: s.history_messages,
            request_bytes: s.request_bytes,
            connection: s.connection,
            retried_stale: s.retried_stale,
            engine: s.engine.clone(),
        }
    }

    /// A counted request (not a warm-up) that succeeded.
    pub fn is_timed(&self) -> bool {
        !self.warmup && self.error.is_none()
    }
}

/// The `path` a request of `phase` is grouped under, after checking that
/// the stored `path` and `strategy` fit the phase (the rules of
/// [`Destination::from_columns`], without building one).
pub(crate) fn checked_path<'a>(
    phase: PhaseKind,
    path: Option<&'a str>,
    strategy: Option<&str>,
) -> Result<Option<&'a str>, String> {
    let fits = match phase {
        PhaseKind::Direct => matches!(path, None | Some(Destination::DIRECT_PATH)),
        PhaseKind::Ping => {
            matches!(path, None | Some(Destination::PING_PATH)) && strategy.is_none()
        }
        _ => strategy.is_none(),
    };
    if !fits {
        // The owned form says exactly what is wrong.
        return Err(Destination::from_columns(
            phase,
            path.map(str::to_owned),
            strategy.map(str::to_owned),
        )
        .err()
        .map_or_else(
            || "path and strategy do not fit the phase".into(),
            |e| e.to_string(),
        ));
    }
    Ok(match phase {
        PhaseKind::Direct => Some(Destination::DIRECT_PATH),
        PhaseKind::Ping => Some(Destination::PING_PATH),
        _ => path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_columns_read_as_the_destination_groups_them() {
        assert_eq!(
            checked_path(PhaseKind::Direct, None, Some("latency")),
            Ok(Some("direct"))
        );
        assert_eq!(checked_path(PhaseKind::Ping, None, None), Ok(Some("ping")));
        assert_eq!(
            checked_path(PhaseKind::Warm, Some("chat"), None),
            Ok(Some("chat"))
        );
        assert_eq!(checked_path(PhaseKind::Warm, None, None), Ok(None));
        for (phase, path, strategy) in [
            (PhaseKind::Direct, Some("chat"), None),
            (PhaseKind::Ping, Some("ping"), Some("latency")),
            (PhaseKind::Warm, Some("chat"), Some("latency")),
        ] {
            let e = checked_path(phase, path, strategy).unwrap_err();
            assert!(e.contains("cannot have path"), "{e}");
        }
    }
}
