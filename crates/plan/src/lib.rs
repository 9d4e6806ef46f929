//! What firsttoken measures: validated targets, request templates and probe
//! specs. Everything here is checked on construction, so the stages after it
//! (drive, record, …) never see a half-valid plan.
//!
//! - `Target`, `RequestTemplate` (secret headers marked sensitive) and
//!   `ProbeSpec` (counts, concurrency, warm/fresh, HTTP version, TLS,
//!   timeouts checked against `MAX_TIMEOUT`, `--resolve`, `StreamFormat`);
//! - [`env`]: `$NAME` in header values;
//! - [`timing`]: response headers read as the app's total server time
//!   (`x-process-time`…), each with its unit;
//! - [`config`]: the session file `firsttoken.toml` (its validation names
//!   file, line and key; timeouts, idle gaps and open-loop spans at most a
//!   day, rates 0.001–10,000/s, at most 100,000 requests a phase and
//!   10,000 in flight; the commented example is embedded);
//! - [`protocol`]: phases expanded over the app's paths into ordered steps
//!   (single requests, idle-gap probes, bursts, open-loop arrivals,
//!   closed-loop workers), `planned()` and its bound `announced()`, the
//!   `article` preset, seeded
//!   interleaving;
//! - [`segment`]: `--segment i/n`, one agent's share of a protocol (nothing
//!   lost or doubled, property-tested) and what a rerun still has to send.
//!
//! ```
//! use firsttoken_plan::{StreamFormat, Target};
//! let t = Target::parse("https://api.example.com/v1/chat/completions").unwrap();
//! assert_eq!((t.host.as_str(), t.port, t.tls()), ("api.example.com", 443, true));
//! assert_eq!("sse-json:/text".parse::<StreamFormat>().unwrap(), StreamFormat::SseJson("/text".into()));
//! ```
#![deny(missing_docs)]

pub mod config;
pub mod env;
pub mod flow;
pub mod protocol;
pub mod proxy;
pub mod segment;
mod stream_format;
pub mod timing;
pub mod transport;

pub use stream_format::StreamFormat;
pub use transport::{SocketIoSpec, Transport, WebSocketSpec};

pub use proxy::Proxy;
pub use timing::{TimeUnit, TimingHeader};

use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// A plan that cannot be run, with what is wrong in words a user can act on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// The URL does not parse or lacks a host.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The proxy URL does not parse (its password masked).
    #[error("invalid proxy {url:?}: {reason}")]
    Proxy {
        /// The proxy URL as given, password masked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header is not `Name: value`.
    #[error("invalid header {header:?}: {reason}")]
    Header {
        /// The header as given.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Unknown stream format name.
    #[error(
        "unknown stream format {0:?}; expected auto, openai-chat, openai-completions, anthropic, responses, ollama, text, vercel-ui, gradio or sse-json:<JSON pointer>"
    )]
    Format(String),
    /// A `--resolve` entry is not `host:port:addr`.
    #[error("invalid resolve entry {0:?}; expected host:port:addr, e.g. example.com:443:127.0.0.1")]
    Resolve(String),
    /// A count or concurrency is out of range.
    #[error("{what} must be {bound}, got {got}")]
    Range {
        /// Which setting.
        what: &'static str,
        /// The allowed range in words.
        bound: &'static str,
        /// The value given.
        got: u64,
    },
    /// An HTTP method name is invalid.
    #[error("invalid HTTP method {0:?}")]
    Method(String),
    /// A WebSocket setting cannot be used as given.
    #[error("WebSocket: {0}")]
    WebSocket(String),
}

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Cleartext.
    Http,
    /// TLS.
    Https,
}

/// Where requests go: a parsed absolute URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or IP literal, without brackets.
    pub host: String,
    /// Port, defaulted from the scheme.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path_and_query: String,
}

impl Target {
    /// Parse an absolute `http://` or `https://` URL.
    pub fn parse(url: &str) -> Result<Target, PlanError> {
        let err = |reason: &str| PlanError::Url {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| err(&e.to_string()))?;
        let scheme = match uri.scheme_str() {
            Some("http") => Scheme::Http,
            Some("https") => Scheme::Https,
            Some(other) => return Err(err(&format!("scheme {other:?} is not http or https"))),
            None => {
                return Err(err(
                    "it needs a scheme, e.g. http://127.0.0.1:8080/v1/chat/completions",
                ));
            }
        };
        if let Some(auth) = uri.authority()
            && let Some((userinfo, at_host)) = auth.as_str().rsplit_once('@')
        {
            // Never silently dropped, never echoed: the error shows the URL
            // with the credentials masked.
            let masked = url.replacen(userinfo, "***", 1);
            return Err(PlanError::Url {
                url: masked,
                reason: format!(
                    "credentials in the URL are not sent; give them as a header instead \
                     (e.g. -H 'Authorization: Bearer $TOKEN') and use the URL without them \
                     (…://{at_host}…)"
                ),
            });
        }
        let host = uri.host().ok_or_else(|| err("it has no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            return Err(err("it has no host"));
        }
        let port = uri.port_u16().unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
        let path_and_query = uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".into());
        let path_and_query = if path_and_query.is_empty() {
            "/".to_string()
        } else {
            path_and_query
        };
        Ok(Target {
            scheme,
            host,
            port,
            path_and_query,
        })
    }

    /// True for `https`.
    pub fn tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// `host:port` as sent in the Host header (port left out when it is the scheme's default).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = match self.scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The URL again, normalised.
    pub fn url(&self) -> String {
        let scheme = if self.tls() { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority(), self.path_and_query)
    }
}

/// Header names whose values are secrets: never printed, stored or logged
/// (the one rule, [`firsttoken_record::store::is_secret_header`]: names
/// with a word such as authorization, token, api key, cookie, secret,
/// password, auth, jwt, bearer, credential, pass, session, signature, hmac
/// or key). A config marks any other header secret by giving its value
/// through an environment variable (`${VAR}`).
pub fn is_secret_header(name: &str) -> bool {
    firsttoken_record::store::is_secret_header(name)
}

/// One request to send repeatedly: method, target, headers and body.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// HTTP method.
    pub method: Method,
    /// Where to send it.
    pub target: Target,
    /// Extra headers; secret ones are marked sensitive.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Request body, if any.
    pub body: Option<Bytes>,
}

impl RequestTemplate {
    /// A template; the method defaults to POST with a body and GET without.
    pub fn new(
        target: Target,
        method: Option<&str>,
        body: Option<Bytes>,
    ) -> Result<RequestTemplate, PlanError> {
        let method = match method {
            Some(m) => Method::from_str(&m.to_ascii_uppercase())
                .map_err(|_| PlanError::Method(m.to_string()))?,
            None if body.is_some() => Method::POST,
            None => Method::GET,
        };
        Ok(RequestTemplate {
            method,
            target,
            headers: Vec::new(),
            body,
        })
    }

    /// Add a header from `Name: value` text, its value marked sensitive
    /// whatever its name (a value the config takes from the environment).
    pub fn add_secret_header_line(&mut self, line: &str) -> Result<(), PlanError> {
        self.add_header_line(line)?;
        if let Some((_, v)) = self.headers.last_mut() {
            v.set_sensitive(true);
        }
        Ok(())
    }

    /// Add a header from `Name: value` text. Values of secret-looking headers are marked sensitive.
    pub fn add_header_line(&mut self, line: &str) -> Result<(), PlanError> {
        let err = |reason: &str| PlanError::Header {
            header: redact_header_line(line),
            reason: reason.to_string(),
        };
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| err("expected `Name: value`"))?;
        let name = HeaderName::from_str(name.trim())
            .map_err(|_| err("the name is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value.trim())
            .map_err(|_| err("the value has characters a header cannot carry"))?;
        if is_secret_header(name.as_str()) {
            value.set_sensitive(true);
        }
        self.headers.push((name, value));
        Ok(())
    }

    /// The secrets this request carries: each sensitive header's value and,
    /// after an auth scheme (`Bearer sk-…`), the credential alone — what a
    /// server might echo back in an error.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, v) in self.headers.iter().filter(|(_, v)| v.is_sensitive()) {
            let Ok(text) = std::str::from_utf8(v.as_bytes()) else {
                continue;
            };
            let text = text.trim();
            let credential = text
                .split_once(' ')
                .map(|(_, c)| c.trim())
                .filter(|c| !c.is_empty());
            out.extend(credential.map(str::to_string));
            if !text.is_empty() {
                out.push(text.to_string());
            }
        }
        // A server may echo a secret JSON-escaped (`sk-a\/b`, `\u002b`) or
        // percent-encoded: each form is masked.
        let forms: Vec<String> = out
            .iter()
            .flat_map(|s| encoded_forms(s))
            .filter(|f| f.len() >= 4)
            .collect();
        out.extend(forms);
        // Longest first, so a whole value is masked before a part of it.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out.dedup();
        out
    }

    /// `text` with every secret of this request replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        self.secrets().iter().fold(text.to_string(), |t, secret| {
            t.replace(secret.as_str(), "***")
        })
    }
}

/// The forms a secret takes when a server echoes it inside JSON or a URL:
/// JSON-escaped (with `/` escaped or not, non-ASCII as `\uXXXX`) and
/// percent-encoded.
fn encoded_forms(secret: &str) -> Vec<String> {
    let json = serde_json::Value::String(secret.to_string()).to_string();
    let json = json[1..json.len() - 1].to_string();
    let ascii: String = json
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                let mut buf = [0u16; 2];
                c.encode_utf16(&mut buf)
                    .iter()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect()
            }
        })
        .collect();
    let pct: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    vec![
        json.replace('/', "\\/"),
        json,
        ascii.replace('/', "\\/"),
        ascii,
        pct,
    ]
}

/// A header line with its value hidden when the name looks secret. A line
/// without a colon keeps only its first word, since where its value starts
/// is unknown.
pub fn redact_header_line(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if is_secret_header(name.trim()) => format!("{}: <redacted>", name.trim()),
        Some(_) => line.to_string(),
        None => match line.split_whitespace().next() {
            Some(first) if first.len() < line.trim().len() => format!("{first} <redacted>"),
            _ => line.to_string(),
        },
    }
}

/// How requests get their connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionMode {
    /// One connection per worker, opened and warmed up before the counted requests.
    #[default]
    Warm,
    /// New DNS lookup, TCP connect and TLS handshake for every request.
    Fresh,
}

/// Which HTTP version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// Over TLS, offer h2 and http/1.1 by ALPN; cleartext uses HTTP/1.1.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only: ALPN h2 over TLS, prior knowledge (h2c) in cleartext.
    Http2,
}

/// TLS settings.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (like curl's `--insecure`).
    pub insecure: bool,
    /// Extra trusted CA certificates, PEM; when set, only these are trusted.
    pub ca_pem: Option<Vec<u8>>,
    /// A returning visitor: a new connection resumes the TLS session of an
    /// earlier one (from its ticket) instead of a full handshake. Off by
    /// default: every new connection is a first visit, with no session cache.
    pub resume: bool,
}

/// Deadlines for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// DNS + TCP + TLS.
    pub connect: Duration,
    /// The whole request, from start to stream end.
    pub request: Duration,
}

/// Longest connect or request timeout: a day. Longer is surely a typo, and
/// deadlines far beyond it overflow the clock.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

impl Timeouts {
    /// Both timeouts longer than zero and at most [`MAX_TIMEOUT`].
    pub fn validate(&self) -> Result<(), PlanError> {
        for (what, d) in [
            ("the connect timeout, in seconds,", self.connect),
            ("the request timeout, in seconds,", self.request),
        ] {
            if d.is_zero() || d > MAX_TIMEOUT {
                return Err(PlanError::Range {
                    what,
                    bound: "longer than zero and at most 86400 (24 h)",
                    got: d.as_secs(),
                });
            }
        }
        Ok(())
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(120),
        }
    }
}

/// A `--resolve host:port:addr` override: skip DNS for this host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolve {
    /// Host name as in the URL.
    pub host: String,
    /// Port as in the URL.
    pub port: u16,
    /// Address to connect to.
    pub addr: IpAddr,
}

impl FromStr for Resolve {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Resolve, PlanError> {
        let err = || PlanError::Resolve(s.to_string());
        let (host, rest) = s.split_once(':').ok_or_else(err)?;
        let (port, addr) = rest.split_once(':').ok_or_else(err)?;
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        Ok(Resolve {
            host: host.to_string(),
            port: port.parse().map_err(|_| err())?,
            addr: addr.parse().map_err(|_| err())?,
        })
    }
}

/// Everything a probe run needs, validated.
#[derive(Debug, Clone)]
pub struct ProbeSpec {
    /// The request to send.
    pub request: RequestTemplate,
    /// Counted requests in total (warm-ups not included).
    pub requests: u64,
    /// Concurrent workers.
    pub concurrency: u32,
    /// Warm or fresh connections.
    pub mode: ConnectionMode,
    /// HTTP version.
    pub http: HttpVersion,
    /// TLS settings.
    pub tls: TlsOptions,
    /// Deadlines.
    pub timeouts: Timeouts,
    /// DNS overrides.
    pub resolve: Vec<Resolve>,
    /// Stream format.
    pub format: StreamFormat,
    /// Largest stream event or line the client buffers, in bytes; a longer
    /// one fails the request as `decode` (see [`DEFAULT_MAX_EVENT_BYTES`]).
    pub max_event_bytes: usize,
    /// The forward proxy to go through, if any ([`proxy::choose`]).
    pub proxy: Option<Proxy>,
    /// The response header that names the route the app took (lower case);
    /// `x-route` by default.
    pub route_header: String,
    /// A JSON pointer (`/route`) into the stream's events where the app
    /// names its route; when found it wins over the header.
    pub route_field: Option<String>,
    /// Ask for compressed responses as a browser does (`Accept-Encoding:
    /// gzip, deflate, br, zstd`) and decode them; otherwise `identity`,
    /// and an encoded response fails as `decode`.
    pub compressed: bool,
    /// Send a W3C `traceparent` header (a fresh random trace id per
    /// request, sampled) so the app's OpenTelemetry spans can be joined to
    /// the sample, which stores the trace id.
    pub trace_context: bool,
    /// Stamp arrivals with the kernel's receive timestamps where the OS
    /// gives them (Linux, `SO_TIMESTAMPNS`); `false` keeps user-space
    /// stamps only (`clock: "user"`), e.g. to compare the two.
    pub kernel_clock: bool,
    /// HTTP requests, or text frames on a WebSocket.
    pub transport: Transport,
    /// Response headers read as the app's total server time (the four of
    /// [`timing::DEFAULT_TIMING_HEADERS`] by default), stored beside the
    /// `Server-Timing` entries as `header:<name>`.
    pub timing_headers: Vec<TimingHeader>,
}

/// Smallest accepted event bound: below a kilobyte ordinary events would fail.
pub const MIN_MAX_EVENT_BYTES: usize = 1024;

/// The response header an app names its route in, unless a path says otherwise.
pub const DEFAULT_ROUTE_HEADER: &str = "x-route";

/// Most requests one probe may send (its samples are kept for the summary).
pub const MAX_PROBE_REQUESTS: u64 = 1_000_000;

/// Default bound on one stream event or line: 1 MiB. An LLM delta is a few
/// hundred bytes; a megabyte holds any real event with room to spare, and
/// keeps a hostile or broken server from growing the client's memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

impl ProbeSpec {
    /// A spec with defaults: 1 request, 1 worker, warm, auto HTTP version and format.
    pub fn new(request: RequestTemplate) -> ProbeSpec {
        ProbeSpec {
            request,
            requests: 1,
            concurrency: 1,
            mode: ConnectionMode::Warm,
            http: HttpVersion::Auto,
            tls: TlsOptions::default(),
            timeouts: Timeouts::default(),
            resolve: Vec::new(),
            format: StreamFormat::Auto,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            proxy: None,
            route_header: DEFAULT_ROUTE_HEADER.into(),
            route_field: None,
            compressed: false,
            trace_context: false,
            kernel_clock: true,
            transport: Transport::Http,
            timing_headers: timing::default_timing_headers(),
        }
    }

    /// Check ranges: 1 to [`MAX_PROBE_REQUESTS`] requests, 1 to
    /// [`config::MAX_CONCURRENCY`] workers, timeouts longer than zero and at most [`MAX_TIMEOUT`].
    pub fn validate(self) -> Result<ProbeSpec, PlanError> {
        self.timeouts.validate()?;
        if self.requests == 0 {
            return Err(PlanError::Range {
                what: "the request count (-n)",
                bound: "at least 1",
                got: 0,
            });
        }
        if self.requests > MAX_PROBE_REQUESTS {
            return Err(PlanError::Range {
                what: "the request count (-n)",
                bound: "at most 1000000 (each sample is kept for the summary)",
                got: self.requests,
            });
        }
        if self.concurrency == 0 || self.concurrency > config::MAX_CONCURRENCY {
            return Err(PlanError::Range {
                what: "the concurrency (-c)",
                bound: "between 1 and 10000",
                got: u64::from(self.concurrency),
            });
        }
        if self.max_event_bytes < MIN_MAX_EVENT_BYTES {
            return Err(PlanError::Range {
                what: "the largest stream event (--max-event-bytes)",
                bound: "at least 1024",
                got: self.max_event_bytes as u64,
            });
        }
        if let Transport::WebSocket(w) = &self.transport {
            w.validate()?;
            if self.http == HttpVersion::Http2 {
                return Err(PlanError::WebSocket(
                    "a WebSocket opens over HTTP/1.1's upgrade; leave out --http 2 and --http2-prior-knowledge".into(),
                ));
            }
        }
        Ok(self)
    }

    /// The address override for the target, if any.
    pub fn resolved_addr(&self) -> Option<IpAddr> {
        let t = &self.request.target;
        self.resolve
            .iter()
            .find(|r| r.host.eq_ignore_ascii_case(&t.host) && r.port == t.port)
            .map(|r| r.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_secrets_are_scrubbed() {
        let target = Target::parse("http://127.0.0.1:1/v1").unwrap();
        let mut r = RequestTemplate::new(target, None, None).unwrap();
        r.add_header_line("Authorization: Bearer sk-live-123456")
            .unwrap();
        r.add_header_line("X-Api-Key: k-987").unwrap();
        r.add_header_line("Accept: text/event-stream").unwrap();
        let echoed = "invalid key sk-live-123456 (header was 'Bearer sk-live-123456'), k-987";
        let clean = r.scrub(echoed);
        assert_eq!(clean, "invalid key *** (header was '***'), ***");
        assert_eq!(
            r.scrub("text/event-stream"),
            "text/event-stream",
            "only secrets"
        );
    }

    /// Issue 29, item 12: a key echoed JSON-escaped (`sk-relia\/SEC+RET=…`)
    /// or percent-encoded was stored in samples and printed by `probe`.
    #[test]
    fn escaped_and_encoded_echoes_are_scrubbed() {
        let target = Target::parse("http://127.0.0.1:1/v1").unwrap();
        let mut r = RequestTemplate::new(target, None, None).unwrap();
        r.add_header_line("Authorization: Bearer sk-relia/SEC+RET=é12")
            .unwrap();
        for echo in [
            r#"{"error":"Incorrect API key provided: sk-relia\/SEC+RET=é12"}"#,
            r#"{"error":"Incorrect API key provided: sk-relia\/SEC+RET=\u00e912"}"#,
            "key=sk-relia%2FSEC%2BRET%3D%C3%A912",
            "sk-relia/SEC+RET=é12",
        ] {
            let clean = r.scrub(echo);
            assert!(!clean.contains("SEC"), "{echo} → {clean}");
            assert!(clean.contains("***"), "{clean}");
        }
    }

    /// Issue 9: `user:password@` in a URL was silently dropped.
    #[test]
    fn credentials_in_a_url_are_a_clear_error_that_hides_them() {
        let e = Target::parse("https://alice:s3cret@api.example.invalid/v1/chat")
            .unwrap_err()
            .to_string();
        assert!(e.contains("credentials in the URL are not sent"), "{e}");
        assert!(!e.contains("s3cret") && !e.contains("alice"), "{e}");
        assert!(e.contains("https://***@api.example.invalid/v1/chat"), "{e}");
        assert!(Target::parse("http://127.0.0.1:8080/x?a=b@c").is_ok());
    }

    #[test]
    fn targets_parse_with_default_ports() {
        let t = Target::parse("http://127.0.0.1:8080/v1/chat/completions?x=1").unwrap();
        assert_eq!(t.port, 8080);
        assert_eq!(t.path_and_query, "/v1/chat/completions?x=1");
        assert_eq!(t.authority(), "127.0.0.1:8080");
        let t = Target::parse("https://[::1]/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 443));
        assert_eq!(t.url(), "https://[::1]/");
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("localhost:80").is_err());
        assert!(Target::parse("not a url").is_err());
    }

    #[test]
    fn headers_mark_secrets_and_redact() {
        let mut r = RequestTemplate::new(
            Target::parse("http://h/").unwrap(),
            None,
            Some(Bytes::from("{}")),
        )
        .unwrap();
        assert_eq!(r.method, Method::POST);
        r.add_header_line("Authorization: Bearer sk-123").unwrap();
        r.add_header_line("X-Custom: yes").unwrap();
        assert!(r.headers[0].1.is_sensitive());
        assert!(!r.headers[1].1.is_sensitive());
        let e = r
            .add_header_line("Authorization Bearer sk-123")
            .unwrap_err();
        assert!(!e.to_string().contains("sk-123"), "{e}");
        assert_eq!(
            redact_header_line("x-api-key: abc"),
            "x-api-key: <redacted>"
        );
    }

    #[test]
    fn formats_and_resolves_parse() {
        for f in [
            "auto",
            "openai-chat",
            "openai-completions",
            "anthropic",
            "responses",
            "ollama",
            "text",
            "vercel-ui",
            "gradio",
            "sse-json:/a/b",
        ] {
            let parsed: StreamFormat = f.parse().unwrap();
            assert_eq!(parsed.to_string(), f);
        }
        assert!("sse-json:a".parse::<StreamFormat>().is_err());
        assert!("xml".parse::<StreamFormat>().is_err());
        let r: Resolve = "example.com:443:127.0.0.1".parse().unwrap();
        assert_eq!(r.port, 443);
        let r: Resolve = "example.com:443:[::1]".parse().unwrap();
        assert_eq!(r.addr.to_string(), "::1");
        assert!("example.com:443".parse::<Resolve>().is_err());
    }

    #[test]
    fn validation_rejects_zero_counts() {
        let r =
            RequestTemplate::new(Target::parse("http://h/").unwrap(), Some("get"), None).unwrap();
        let mut s = ProbeSpec::new(r);
        s.requests = 0;
        assert!(s.clone().validate().is_err());
        s.requests = 1;
        s.concurrency = 0;
        assert!(s.clone().validate().is_err());
        s.concurrency = 1;
        assert!(s.clone().validate().is_ok());
        // Defect 4 of issue 8: a timeout of u64::MAX seconds overflowed a deadline inside a worker.
        for (connect, request) in [
            (Duration::from_secs(u64::MAX), Duration::from_secs(1)),
            (Duration::from_secs(1), Duration::from_secs(u64::MAX)),
            (Duration::ZERO, Duration::from_secs(1)),
            (
                Duration::from_secs(1),
                MAX_TIMEOUT + Duration::from_nanos(1),
            ),
        ] {
            s.timeouts = Timeouts { connect, request };
            let e = s.clone().validate().unwrap_err();
            assert!(e.to_string().contains("timeout"), "{e}");
        }
        s.timeouts = Timeouts {
            connect: MAX_TIMEOUT,
            request: MAX_TIMEOUT,
        };
        assert!(s.validate().is_ok());
    }
}
