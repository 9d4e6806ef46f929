//! Browser measurements kept as a session (`firsttoken browse --store`):
//! a session row made before the first message, each message stored as a
//! sample the moment it is measured (so an interruption loses only the
//! message in flight), and the row finished as `complete`, or `partial`
//! with the reason.
//!
//! Each message is an app request of path [`BROWSER_PATH`], in phase
//! `warm` (one page, a returning user) or `fresh` (a new browser context
//! each time), or `concurrency` at its level when several contexts sent
//! their messages at once; its network stamps are the sample's, its paints the
//! sample's `painted`. The session's spec names the page, the selectors
//! and the visit, never a local-storage value (sign-in tokens).

use std::time::{Instant, SystemTime};

use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::store::{host_name, mask_url};
use firsttoken_record::{Destination, PhaseKind, Sample, Store, StoreError, UtcTime};

use crate::{BrowseSpec, SendAction};

pub use firsttoken_plan::config::BROWSER_PATH;

/// A browser message as a stored row: path [`BROWSER_PATH`] in `phase` at
/// `level`, begun at `began` (its round's start), `origin` the session's
/// start. Shared by `browse --store` and a session's browser phases.
pub fn message_row(
    session_id: &str,
    (phase, level): (PhaseKind, Option<u32>),
    (began, origin): (Instant, Instant),
    provenance: Provenance,
    sample: Sample,
) -> SampleRow {
    SampleRow {
        session_id: session_id.to_string(),
        phase,
        dest: Destination::App {
            path: Some(BROWSER_PATH.to_string()),
        },
        concurrency: level,
        intended_start_ms: None,
        actual_start_ms: began.saturating_duration_since(origin).as_secs_f64() * 1000.0,
        started_at: UtcTime::from(SystemTime::now() - began.elapsed()),
        provenance,
        prompt: None,
        sample,
    }
}

/// A session of browser measurements being recorded.
pub struct Recording {
    store: Store,
    meta: SessionMeta,
    phase: PhaseKind,
    /// Contexts sending at once, when more than one.
    level: Option<u32>,
    /// The session's start, the origin of each sample's `actual_start_ms`.
    origin: Instant,
    stored: u64,
}

impl Recording {
    /// Create the session row: `fresh` visits or warm ones, `level`
    /// contexts at once (`None`: one), `count` messages planned, `seed` the
    /// report's bootstrap seed.
    pub async fn start(
        store: Store,
        spec: &BrowseSpec,
        fresh: bool,
        level: Option<u32>,
        count: u32,
        seed: u64,
    ) -> Result<Recording, StoreError> {
        let now = SystemTime::now();
        let visit = if fresh {
            PhaseKind::Fresh
        } else {
            PhaseKind::Warm
        };
        let phase = if level.is_some() {
            PhaseKind::Concurrency
        } else {
            visit
        };
        let send = match &spec.send {
            SendAction::Enter => "enter".to_string(),
            SendAction::Click(sel) => sel.clone(),
        };
        let meta = SessionMeta {
            id: firsttoken_record::session::new_session_id(now),
            started_at: UtcTime::from(now),
            ended_at: None,
            status: SessionStatus::Running,
            spec: serde_json::json!({
                "browse": {
                    "url": mask_url(&spec.url),
                    "input": spec.input,
                    "answer": spec.answer,
                    "send": send,
                    "request_match": spec.request_match,
                    "send_match": spec.send_match,
                    "socket_event": spec.socket_event,
                    "format": spec.format.to_string(),
                    "visit": visit.as_str(),
                    "contexts": level.unwrap_or(1),
                    "timeout_ms": spec.timeout.as_millis() as u64,
                    "settle_ms": spec.settle.as_millis() as u64,
                    "traceparent": spec.traceparent,
                },
                "planned": { phase.as_str(): count },
            }),
            seed,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host_name(),
            pid: Some(std::process::id()),
            labels: Labels {
                network: "unknown".into(),
                code_version: "unknown".into(),
                vantage: host_name(),
                tags: Default::default(),
            },
            provenance: Provenance::Measured,
            cleanup: None,
            client_lag_p99_ms: None,
        };
        store.create_session(&meta).await?;
        Ok(Recording {
            store,
            meta,
            phase,
            level,
            origin: Instant::now(),
            stored: 0,
        })
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.meta.id
    }

    /// Store one measured message, which began `began` (the action).
    pub async fn add(&mut self, sample: &Sample, began: Instant) -> Result<(), StoreError> {
        let row = message_row(
            &self.meta.id,
            (self.phase, self.level),
            (began, self.origin),
            Provenance::Measured,
            sample.clone(),
        );
        self.store.append_sample(&row).await?;
        self.stored += 1;
        Ok(())
    }

    /// Finish the session: `complete`, or `partial` with `interrupted`'s
    /// reason; returns it as stored.
    pub async fn finish(mut self, interrupted: Option<String>) -> Result<SessionMeta, StoreError> {
        let status = match interrupted {
            None => SessionStatus::Complete,
            Some(reason) => SessionStatus::Partial { reason },
        };
        let ended = UtcTime::now();
        self.store
            .finish_session(&self.meta.id, &status, ended, None, None)
            .await?;
        self.meta.status = status;
        self.meta.ended_at = Some(ended);
        Ok(self.meta)
    }

    /// Messages stored so far.
    pub fn stored(&self) -> u64 {
        self.stored
    }
}
