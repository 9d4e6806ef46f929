//! The engine's own metrics, scraped before and after a session: the
//! stored vocabulary of a scrape (issue 28).
//!
//! A session with `[engine] metrics_url` reads the engine's Prometheus
//! text endpoint (vLLM's and llama.cpp's `/metrics`) once before its first
//! request ([`ScrapeMoment::Start`]) and once after its last
//! ([`ScrapeMoment::End`]). The body is kept as received, so a report can
//! turn the counters' and histograms' differences into what the engine
//! saw during the session; a scrape that failed keeps why.

use serde::{Deserialize, Serialize};

use crate::vocab::UtcTime;

/// The largest scrape body the store keeps, in bytes (8 MiB). A session
/// reads at most 1 MiB of it (the limit of drive's set-up calls): a larger
/// body is stored as an error. The fixture of vLLM's `/metrics` with one
/// model is under 10 KB.
pub const MAX_SCRAPE_BYTES: usize = 8 << 20;

/// When a scrape was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScrapeMoment {
    /// Before the session's first request.
    Start,
    /// After its last request.
    End,
}

impl ScrapeMoment {
    /// Both moments, in time order (the stores' `CHECK` lists them).
    pub const ALL: [ScrapeMoment; 2] = [ScrapeMoment::Start, ScrapeMoment::End];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScrapeMoment::Start => "start",
            ScrapeMoment::End => "end",
        }
    }

    /// The moment a stored name names.
    pub fn parse(s: &str) -> Option<ScrapeMoment> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// One scrape of the engine's metrics endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineScrape {
    /// The session it belongs to.
    pub session_id: String,
    /// Before or after the session's requests.
    pub moment: ScrapeMoment,
    /// When the response arrived (or the attempt failed).
    pub taken_at: UtcTime,
    /// The URL scraped (a password in it is masked by the store).
    pub url: String,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// The body as received (Prometheus text), when the status was 2xx.
    pub body: Option<String>,
    /// Why there is no usable body: the connection failed, a non-2xx
    /// status, a body over [`MAX_SCRAPE_BYTES`] or not UTF-8.
    pub error: Option<String>,
}
