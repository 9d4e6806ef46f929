//! A real browser as the measuring client: headless Chromium, driven over
//! the Chrome DevTools Protocol (chromiumoxide), types a message into a
//! chat page, sends it as a user would, and stamps on one clock (the
//! DevTools clock, `CLOCK_MONOTONIC` on Linux):
//!
//! 1. the user's action (the trusted `keydown`/`mousedown` event the page
//!    received),
//! 2. the request carrying the message leaving (`Network.requestWillBeSent`)
//!    with the browser's own phase timing (or, when the answer streams on
//!    another request, the one [`BrowseSpec::send_match`] names),
//! 3. the response head, the first body data and the first content token as
//!    the browser's network stack saw them (`Network.dataReceived` with the
//!    bytes, via `Network.streamResourceContent`, decoded by drive's stream
//!    decoder),
//! 4. the first token on screen: an injected `MutationObserver` stamps the
//!    first non-empty text of the answer element, and the next animation
//!    frame after it is the moment it is painted; the page's clock is
//!    converted to the DevTools clock through the request's resource-timing
//!    entry (the same underlying tick on both sides),
//! 5. the last token painted.
//!
//! A message that shows nothing ends in a named error kind (record's
//! `no_content`, `timeout`, `page_error`). Chromium runs
//! in its own process group on a temporary profile and is killed as a group
//! when the [`Browser`] is dropped; its resolver resolves only the hosts the
//! spec allows, and background networking is off, so a measurement of a
//! loopback page sends nothing anywhere else.
//!
//! ```no_run
//! # async fn demo() -> Result<(), firsttoken_browse::BrowseError> {
//! use firsttoken_browse::{BrowseSpec, Browser, SendAction};
//! let spec = BrowseSpec::new("http://127.0.0.1:8090/chat", "#message", ".assistant")?;
//! let browser = Browser::launch(&spec).await?;
//! let page = browser.open(&spec).await?;
//! let m = page.measure("Hello", &spec).await?;
//! println!("{:?} render lag {:?} ms", m.error, m.render_lag_ms());
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod exchange;
mod launch;
mod message;
pub mod recording;
mod rounds;
mod signin;

use std::path::PathBuf;
use std::time::Duration;

use firsttoken_plan::StreamFormat;
use firsttoken_record::{Connection, FirstOutput, Painted, Sample, SampleError};
use serde::Serialize;

pub use launch::find_chromium;
pub use message::Page;
pub use rounds::{Rounds, Sent};
pub use signin::Cookie;

use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use futures_util::StreamExt;

/// How the message is sent once typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendAction {
    /// Press Enter in the input.
    Enter,
    /// Click the element this CSS selector matches.
    Click(String),
}

/// What to measure and how: the page, its selectors, and limits.
#[derive(Debug, Clone)]
pub struct BrowseSpec {
    /// The page to open.
    pub url: String,
    /// CSS selector of the message input.
    pub input: String,
    /// How to send.
    pub send: SendAction,
    /// CSS selector of the answer element (the last match is the answer).
    pub answer: String,
    /// Only a request whose URL contains this counts as the message's
    /// request; `None`: the first request after the action whose body
    /// carries a content token.
    pub request_match: Option<String>,
    /// When the message goes out on one request and its answer streams on
    /// another (Gradio's page posts `queue/join`, then reads `queue/data`):
    /// the first request after the action whose URL contains this is the
    /// message's start, from which every time counts; the answer is still
    /// read from the request [`BrowseSpec::request_match`] picks. `None`:
    /// the answer's own request is the start.
    pub send_match: Option<String>,
    /// When the answer comes over the page's WebSocket as Socket.IO events
    /// (`42["name", payload]`): the event's name; each such payload is
    /// decoded with [`BrowseSpec::format`] (e.g. `sse-json:/data/content`).
    /// `None`: each text frame of a WebSocket [`BrowseSpec::request_match`]
    /// picks is one whole event of the format.
    pub socket_event: Option<String>,
    /// With `socket_event`: the JSON pointer whose `true` in an event's
    /// payload ends the answer (e.g. `/data/done`).
    pub socket_done: Option<String>,
    /// The stream's format (`auto` decides from Content-Type).
    pub format: StreamFormat,
    /// `localStorage` entries set before the page's scripts run (a sign-in
    /// token, say). Values are secrets: never logged or shown.
    pub local_storage: Vec<(String, SecretValue)>,
    /// Cookies set in each context before the page loads (a sign-in
    /// session); values are secrets.
    pub cookies: Vec<Cookie>,
    /// Host names Chromium may resolve besides the page's own host and
    /// loopback; everything else fails to resolve.
    pub allow_hosts: Vec<String>,
    /// How long one message may take, from the action to its last paint.
    pub timeout: Duration,
    /// How long the answer must stay unchanged after the stream ended for
    /// its last paint to count as the last.
    pub settle: Duration,
    /// The Chromium executable.
    pub chromium: PathBuf,
    /// Send a W3C `traceparent` with a fresh trace id per message on the
    /// page's requests (so the app's spans join the sample).
    pub traceparent: bool,
}

/// A value kept out of every `Debug` output.
#[derive(Clone)]
pub struct SecretValue(pub String);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl BrowseSpec {
    /// A spec with defaults: Enter sends, any request, `auto` format, 60 s
    /// timeout, 300 ms settle, a `traceparent` per message, Chromium found
    /// by [`find_chromium`].
    pub fn new(url: &str, input: &str, answer: &str) -> Result<BrowseSpec, BrowseError> {
        BrowseSpec::with_chromium(url, input, answer, None)
    }

    /// [`BrowseSpec::new`] with the Chromium executable given (`None`:
    /// found by [`find_chromium`]).
    pub fn with_chromium(
        url: &str,
        input: &str,
        answer: &str,
        chromium: Option<&std::path::Path>,
    ) -> Result<BrowseSpec, BrowseError> {
        let spec = BrowseSpec {
            url: url.to_string(),
            input: input.to_string(),
            send: SendAction::Enter,
            answer: answer.to_string(),
            request_match: None,
            send_match: None,
            socket_event: None,
            socket_done: None,
            format: StreamFormat::Auto,
            local_storage: Vec::new(),
            cookies: Vec::new(),
            allow_hosts: Vec::new(),
            timeout: Duration::from_secs(60),
            settle: Duration::from_millis(300),
            chromium: find_chromium(chromium)?,
            traceparent: true,
        };
        spec.host()?;
        Ok(spec)
    }

    /// The page's host, which Chromium may resolve.
    pub fn host(&self) -> Result<String, BrowseError> {
        let rest = self
            .url
            .strip_prefix("http://")
            .or_else(|| self.url.strip_prefix("https://"))
            .ok_or_else(|| BrowseError::Spec(format!("{}: not an http(s) URL", self.url)))?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or("").to_string(),
            None => authority.split(':').next().unwrap_or("").to_string(),
        };
        if host.is_empty() {
            return Err(BrowseError::Spec(format!("{}: no host", self.url)));
        }
        Ok(host)
    }

    fn resolvable_hosts(&self) -> Result<Vec<String>, BrowseError> {
        let mut hosts = vec![self.host()?, "localhost".into(), "127.0.0.1".into()];
        hosts.extend(self.allow_hosts.iter().cloned());
        Ok(hosts)
    }
}

/// One measured message. Times are milliseconds on the DevTools clock from
/// the message's start (`Network.requestWillBeSent` of the message's
/// request, or of the [`BrowseSpec::send_match`] request), like an HTTP
/// sample's; `input_lead_ms` is how long before
/// that the user's action happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    /// Why it showed no answer: `no_content` (the exchange ended and the
    /// answer element never showed text), `timeout` (nothing painted in
    /// time) or `page_error` (the page threw or logged an error and
    /// painted nothing, or its tab crashed; the message is the error).
    /// `None`: the answer was painted.
    pub error: Option<SampleError>,
    /// URL of the request that carried the answer, when one was seen.
    pub request_url: Option<String>,
    /// URL of the request the times count from when it is not the
    /// answer's ([`BrowseSpec::send_match`]).
    pub send_url: Option<String>,
    /// Its HTTP status.
    pub status: Option<u16>,
    /// Its protocol as the browser reported it (`http/1.1`, `h2`).
    pub http_version: Option<String>,
    /// DNS done, when the request opened a connection (browser timing).
    pub dns_ms: Option<f64>,
    /// TCP connected, when it opened a connection.
    pub connect_ms: Option<f64>,
    /// TLS done, when it opened a TLS connection.
    pub tls_ms: Option<f64>,
    /// The user's action (input event) to the request's start.
    pub input_lead_ms: Option<f64>,
    /// Request fully sent (the browser's `sendEnd`).
    pub sent_ms: Option<f64>,
    /// Response head received (`receiveHeadersEnd`).
    pub headers_ms: Option<f64>,
    /// First body data the network stack delivered.
    pub first_data_ms: Option<f64>,
    /// First body data carrying a content token: the network-level TTFT.
    pub ttft_ms: Option<f64>,
    /// Last body data carrying a content token.
    pub last_token_ms: Option<f64>,
    /// The response finished (`loadingFinished`).
    pub end_ms: Option<f64>,
    /// The answer element first showed text (the DOM change).
    pub first_dom_ms: Option<f64>,
    /// The animation frame after that change: the painted TTFT.
    pub painted_ttft_ms: Option<f64>,
    /// The frame after the answer's last change: the last token painted.
    pub painted_last_ms: Option<f64>,
    /// Body data events that carried content.
    pub content_chunks: u64,
    /// Of those, how many had arrived when the first text was painted
    /// (1 for a page that shows the first token as it comes).
    pub chunks_before_first_paint: Option<u64>,
    /// How the page's clock was put on the DevTools clock.
    pub clock: ClockLink,
    /// The trace id of the `traceparent` the page's requests carried for
    /// this message (`None`: none was sent).
    pub trace_id: Option<String>,
}

/// How the page's `performance.now()` stamps were converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockLink {
    /// Through the request's resource-timing entry: `requestStart` on the
    /// page is the DevTools `requestTime + sendStart` (the same tick).
    ResourceTiming,
    /// Through wall time (`performance.timeOrigin` and the request's
    /// `wallTime`): resolution about a millisecond, and exposed to steps of
    /// the system clock.
    WallTime,
    /// No page stamp was converted.
    None,
}

impl Measured {
    /// Painted TTFT minus network TTFT: what the front end added.
    pub fn render_lag_ms(&self) -> Option<f64> {
        Some(self.painted_ttft_ms? - self.ttft_ms?)
    }
}

/// Why a browser measurement could not run at all (a message that shows
/// nothing is a [`Measured::error`], not an error).
#[derive(Debug, thiserror::Error)]
pub enum BrowseError {
    /// No Chromium found.
    #[error(
        "no Chromium found: install Debian's `chromium`, or give its path (--chromium or FIRSTTOKEN_CHROMIUM)"
    )]
    NoChromium,
    /// The spec is unusable.
    #[error("{0}")]
    Spec(String),
    /// Chromium did not start.
    #[error("starting {executable}: {message}")]
    Launch {
        /// The executable.
        executable: PathBuf,
        /// What happened.
        message: String,
    },
    /// A DevTools command failed.
    #[error("DevTools: {context}: {message}")]
    Cdp {
        /// What was being done.
        context: &'static str,
        /// The error.
        message: String,
    },
    /// The page did not load.
    #[error("opening {url}: {message}")]
    Open {
        /// The page.
        url: String,
        /// What happened.
        message: String,
    },
}

pub(crate) fn cdp(context: &'static str) -> impl Fn(chromiumoxide::error::CdpError) -> BrowseError {
    move |e| BrowseError::Cdp {
        context,
        message: e.to_string(),
    }
}

/// A headless Chromium under our control; dropping it kills its process
/// group and removes its temporary profile.
pub struct Browser {
    inner: chromiumoxide::Browser,
    handler: tokio::task::JoinHandle<()>,
    chromium: launch::Chromium,
}

impl Browser {
    /// Start Chromium for `spec` (its host and `allow_hosts` resolvable,
    /// nothing else) and connect to it.
    pub async fn launch(spec: &BrowseSpec) -> Result<Browser, BrowseError> {
        let chromium = launch::Chromium::start(
            &spec.chromium,
            &spec.resolvable_hosts()?,
            Duration::from_secs(30),
        )
        .await?;
        let (inner, mut handler) = chromiumoxide::Browser::connect(chromium.ws_url.clone())
            .await
            .map_err(cdp("connect"))?;
        let handler = tokio::spawn(async move {
            // The handler drives the connection; an error item is a message
            // the crate could not parse, which does not end the session.
            while handler.next().await.is_some() {}
        });
        Ok(Browser {
            inner,
            handler,
            chromium,
        })
    }

    /// The browser's operating-system process id.
    pub fn pid(&self) -> Option<u32> {
        self.chromium.pid()
    }

    /// Open `spec.url` in a new tab of a new browser context (no cookies,
    /// no cache, new connections: a first visit), with the stamping script
    /// and `spec.local_storage` installed before the page's scripts.
    pub async fn open(&self, spec: &BrowseSpec) -> Result<Page, BrowseError> {
        let ctx = self
            .inner
            .create_browser_context(Default::default())
            .await
            .map_err(cdp("new browser context"))?;
        let target = CreateTargetParams::builder()
            .url("about:blank")
            .browser_context_id(ctx)
            .build()
            .map_err(|e| BrowseError::Cdp {
                context: "new tab",
                message: e,
            })?;
        let page = self.inner.new_page(target).await.map_err(cdp("new tab"))?;
        Page::prepare(page, spec).await
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.handler.abort();
    }
}

impl Measured {
    /// The message as a stored sample (`seq`, `worker`): the network stamps
    /// in the sample's own fields, the paints in [`Sample::painted`]. The
    /// browser decides connection reuse itself, and its own timing says
    /// which: `fresh` when the request opened one (`connect_ms` is present
    /// only then), else `reused`.
    pub fn to_sample(&self, seq: u64, worker: u32) -> Sample {
        let connection = if self.connect_ms.is_some() {
            Connection::Fresh
        } else {
            Connection::Reused
        };
        let mut s = Sample::empty(seq, worker, connection);
        // The stored names; a protocol outside them (h3) is left unnamed.
        s.http_version = match self.http_version.as_deref() {
            Some("http/1.1") => Some("HTTP/1.1".into()),
            Some("h2") => Some("HTTP/2".into()),
            _ => None,
        };
        s.dns_ms = self.dns_ms;
        s.connect_ms = self.connect_ms;
        s.tls_ms = self.tls_ms;
        s.sent_ms = self.sent_ms;
        s.ttfb_ms = self.headers_ms;
        s.headers_ms = self.headers_ms;
        s.ttfe_ms = self.first_data_ms;
        s.ttft_ms = self.ttft_ms;
        s.first_output_ms = self.ttft_ms;
        s.first_output = self.ttft_ms.map(|_| FirstOutput::Text);
        s.last_token_ms = self.last_token_ms;
        s.e2e_ms = self.end_ms;
        s.content_chunks = self.content_chunks;
        s.status = self.status;
        s.painted = Some(Painted {
            input_lead_ms: self.input_lead_ms,
            first_dom_ms: self.first_dom_ms,
            painted_ttft_ms: self.painted_ttft_ms,
            painted_last_ms: self.painted_last_ms,
            chunks_before_first_paint: self.chunks_before_first_paint,
        });
        s.error = self.error.clone();
        s.trace_id = self.trace_id.clone();
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn spec(url: &str) -> BrowseSpec {
        BrowseSpec {
            url: url.into(),
            input: "#m".into(),
            send: SendAction::Enter,
            answer: ".a".into(),
            request_match: None,
            send_match: None,
            socket_event: None,
            socket_done: None,
            format: StreamFormat::Auto,
            local_storage: vec![("k".into(), SecretValue("s3cret".into()))],
            cookies: Vec::new(),
            allow_hosts: vec!["cdn.test".into()],
            timeout: Duration::from_secs(1),
            settle: Duration::from_millis(1),
            chromium: PathBuf::from("/nonexistent"),
            traceparent: true,
        }
    }

    #[test]
    fn the_page_host_is_what_chromium_may_resolve() {
        assert_eq!(
            spec("http://127.0.0.1:8090/chat").host().unwrap(),
            "127.0.0.1"
        );
        assert_eq!(spec("https://[::1]:443/x").host().unwrap(), "::1");
        assert_eq!(spec("http://app.test/?q=1").host().unwrap(), "app.test");
        assert!(spec("ftp://x/").host().is_err());
        assert!(spec("http:///chat").host().is_err());
        let hosts = spec("http://app.test/").resolvable_hosts().unwrap();
        assert_eq!(hosts, ["app.test", "localhost", "127.0.0.1", "cdn.test"]);
    }

    #[test]
    fn local_storage_values_never_print() {
        let shown = format!("{:?}", spec("http://127.0.0.1/"));
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
