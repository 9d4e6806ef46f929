//! The upstream model: any OpenAI-compatible `chat/completions` endpoint,
//! called with `stream: true`, its server-sent events read as they arrive.
//!
//! The client is reqwest, built once and shared by every request: it wraps
//! hyper-util's pooled client (keep-alive connections reused across
//! requests, HTTP/2 by ALPN over TLS) and adds rustls with the platform's
//! trust store, connect and read timeouts, and proxy support, which is what
//! an ordinary app team would pick. (firsttoken's own measuring client uses
//! raw hyper instead, to time each connection phase; this app only needs the
//! moments it sees at its own level.)

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use crate::config::Config;
use crate::telemetry::Traced;
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;

/// Longest SSE line accepted from upstream.
const MAX_LINE: usize = 1 << 20;
/// Most of an upstream error body kept for the message.
const MAX_ERROR_BODY: usize = 4096;

/// One prompt message.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PromptMessage {
    pub role: &'static str,
    pub content: String,
}

/// What went wrong upstream.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// No connection, or no response headers in time.
    #[error("upstream unreachable: {0}")]
    Connect(String),
    /// A non-success status.
    #[error("upstream answered {status}: {message}")]
    Status { status: u16, message: String },
    /// The stream broke, stalled or ended early.
    #[error("upstream stream failed: {0}")]
    Stream(String),
    /// The upstream sent something that is not an OpenAI chunk stream, or an
    /// error object inside the stream.
    #[error("upstream error: {0}")]
    Protocol(String),
}

/// The shared upstream client.
pub(crate) struct Upstream {
    /// The forms of the upstream key an error message may echo (as sent,
    /// JSON-escaped, percent-encoded): replaced before a message is logged
    /// or forwarded.
    secrets: Vec<String>,
    client: reqwest::Client,
    url: reqwest::Url,
    auth: Option<HeaderValue>,
    model: String,
    provider_order: Vec<String>,
}

impl Upstream {
    pub(crate) fn new(config: &Config) -> Result<Upstream, reqwest::Error> {
        let o = config.options();
        let client = reqwest::Client::builder()
            .connect_timeout(o.upstream_connect_timeout)
            .read_timeout(o.upstream_read_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .user_agent(concat!("firsttoken-refapp/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let auth = config.upstream_key.as_ref().and_then(|k| {
            let mut v = HeaderValue::from_str(&format!("Bearer {k}")).ok()?;
            v.set_sensitive(true); // kept out of Debug output and HPACK tables
            Some(v)
        });
        Ok(Upstream {
            secrets: config
                .upstream_key
                .as_deref()
                .map(echoes)
                .unwrap_or_default(),
            client,
            url: config.chat_completions_url.clone(),
            auth,
            model: o.model.clone(),
            provider_order: o.provider_order.clone(),
        })
    }

    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// The span of one chat call starting now, under `parent`: CLIENT,
    /// with the `gen_ai.*` and HTTP client attributes.
    pub(crate) fn span(&self, parent: &Traced) -> Traced {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", "openai"),
            KeyValue::new("gen_ai.request.model", self.model.clone()),
            KeyValue::new("http.request.method", "POST"),
            KeyValue::new("url.full", self.url.to_string()),
        ];
        if let Some(h) = self.url.host_str() {
            attributes.push(KeyValue::new("server.address", h.to_string()));
        }
        if let Some(p) = self.url.port_or_known_default() {
            attributes.push(KeyValue::new("server.port", i64::from(p)));
        }
        parent.child(format!("chat {}", self.model), SpanKind::Client, attributes)
    }

    /// Send the request and wait for the response headers.
    pub(crate) async fn start(
        &self,
        messages: &[PromptMessage],
        request_id: &str,
        span: &Traced,
    ) -> Result<UpstreamStream, UpstreamError> {
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !self.provider_order.is_empty() {
            body["provider"] = json!({"order": self.provider_order});
        }
        let mut req = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .header("x-request-id", request_id)
            .body(body.to_string());
        if let Some(a) = &self.auth {
            req = req.header(AUTHORIZATION, a.clone());
        }
        let mut trace = reqwest::header::HeaderMap::new();
        span.inject(&mut trace);
        req = req.headers(trace);
        let sent_at = Instant::now();
        let resp = req.send().await.map_err(|e| {
            UpstreamError::Connect(if e.is_timeout() {
                "timed out".into()
            } else {
                error_chain(&e)
            })
        })?;
        let status = resp.status();
        if !status.is_success() {
            // A provider that refuses a key often quotes it back
            // ("Incorrect API key provided: sk-…"): never pass it on.
            return Err(UpstreamError::Status {
                status: status.as_u16(),
                message: self.scrub(&error_body(resp).await),
            });
        }
        // The app asked for no content coding; a body the client cannot
        // read as SSE is said so, not taken for a stream cut short.
        if let Some(enc) = resp
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .filter(|e| !e.eq_ignore_ascii_case("identity"))
        {
            return Err(UpstreamError::Protocol(format!(
                "the upstream sent a {enc}-encoded response the app did not ask for (no Accept-Encoding): it cannot be read as a stream"
            )));
        }
        Ok(UpstreamStream {
            secrets: self.secrets.clone(),
            resp,
            sent_at,
            decoder: SseDecoder::default(),
            pending: VecDeque::new(),
            finished: false,
            done: false,
        })
    }
}

/// The forms in which a key can come back in an error message: as sent,
/// JSON-escaped (`sk-a\/b`), percent-encoded.
fn echoes(key: &str) -> Vec<String> {
    let mut v = vec![key.to_string()];
    let json = serde_json::Value::String(key.to_string()).to_string();
    v.push(json[1..json.len() - 1].replace('/', "\\/"));
    v.push(json[1..json.len() - 1].to_string());
    let pct: String = key
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    v.push(pct);
    v.retain(|s| s.len() >= 4);
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v.dedup();
    v
}

impl Upstream {
    /// `text` with every echo of the upstream key replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            out = out.replace(s.as_str(), "***");
        }
        out
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

async fn error_body(mut resp: reqwest::Response) -> String {
    let mut buf = Vec::new();
    let read = async {
        while buf.len() < MAX_ERROR_BODY {
            match resp.chunk().await {
                Ok(Some(c)) => buf.extend_from_slice(&c),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    buf.truncate(MAX_ERROR_BODY);
    let text = String::from_utf8_lossy(&buf).into_owned();
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or(text)
}

/// An upstream chunk, reduced to what the app forwards.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Delta {
    pub model: Option<String>,
    pub role: Option<String>,
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
}

impl Delta {
    fn from_chunk(v: &Value) -> Delta {
        let choice = v.pointer("/choices/0");
        let delta = choice.and_then(|c| c.get("delta"));
        let text = |k: &str| {
            delta
                .and_then(|d| d.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Delta {
            model: v.get("model").and_then(Value::as_str).map(str::to_string),
            role: text("role"),
            content: text("content"),
            reasoning: text("reasoning").or_else(|| text("reasoning_content")),
            finish_reason: choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Value::as_str)
                .map(str::to_string),
            usage: v.get("usage").filter(|u| u.is_object()).cloned(),
        }
    }
}

/// What the upstream stream yields next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Delta(Delta),
    Done,
}

/// An upstream response being read.
pub(crate) struct UpstreamStream {
    /// The upstream key's forms, scrubbed from in-stream error messages.
    secrets: Vec<String>,
    resp: reqwest::Response,
    sent_at: Instant,
    decoder: SseDecoder,
    pending: VecDeque<SseEvent>,
    finished: bool,
    done: bool,
}

impl UpstreamStream {
    /// When the request was sent: upstream TTFT counts from here.
    pub(crate) fn sent_at(&self) -> Instant {
        self.sent_at
    }

    /// The next chunk, `Done` at `data: [DONE]` (or a clean end after a
    /// finish reason), or an error (the upstream key never in its message).
    pub(crate) async fn next(&mut self) -> Result<Item, UpstreamError> {
        self.next_raw().await.map_err(|e| match e {
            UpstreamError::Protocol(m) => {
                let mut m = m;
                for s in &self.secrets {
                    m = m.replace(s.as_str(), "***");
                }
                UpstreamError::Protocol(m)
            }
            other => other,
        })
    }

    async fn next_raw(&mut self) -> Result<Item, UpstreamError> {
        loop {
            if self.done {
                return Ok(Item::Done);
            }
            if let Some(ev) = self.pending.pop_front() {
                if ev.data.trim() == "[DONE]" {
                    self.done = true;
                    return Ok(Item::Done);
                }
                if ev.event.as_deref() == Some("error") {
                    return Err(UpstreamError::Protocol(ev.data));
                }
                let v: Value = serde_json::from_str(&ev.data).map_err(|e| {
                    UpstreamError::Protocol(format!("not a JSON chunk ({e}): {:.200}", ev.data))
                })?;
                if let Some(err) = v.get("error") {
                    let m = err
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| err.to_string(), str::to_string);
                    return Err(UpstreamError::Protocol(m));
                }
                let d = Delta::from_chunk(&v);
                if d.finish_reason.is_some() {
                    self.finished = true;
                }
                return Ok(Item::Delta(d));
            }
            match self.resp.chunk().await {
                Ok(Some(bytes)) => {
                    let mut evs = Vec::new();
                    self.decoder
                        .feed(&bytes, &mut evs)
                        .map_err(|e| UpstreamError::Protocol(e.into()))?;
                    self.pending.extend(evs);
                }
                Ok(None) if self.finished => {
                    self.done = true;
                }
                Ok(None) => {
                    return Err(UpstreamError::Stream(
                        "the stream ended before a finish reason".into(),
                    ));
                }
                Err(e) if e.is_timeout() => {
                    return Err(UpstreamError::Stream("read timed out".into()));
                }
                Err(e) => return Err(UpstreamError::Stream(error_chain(&e))),
            }
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// A push parser for `text/event-stream` (the WHATWG rules this app needs:
/// CR, LF or CRLF line ends, even split across reads; `data` lines joined
/// with LF; comments and unknown fields ignored).
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    after_cr: bool,
}

impl SseDecoder {
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), &str> {
        for &b in bytes {
            let after_cr = std::mem::take(&mut self.after_cr);
            match b {
                b'\n' if after_cr => {}
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.end_line(out);
                    self.after_cr = true;
                }
                _ => {
                    if self.line.len() >= MAX_LINE {
                        return Err("an SSE line is longer than 1 MiB");
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.has_data = false;
            self.event = None;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(&line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
    }
}

/// Bytes of one SSE `data:` event carrying a JSON value.
pub(crate) fn data_event(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split(input: &[u8], at: usize) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        d.feed(&input[..at], &mut out).unwrap();
        d.feed(&input[at..], &mut out).unwrap();
        out
    }

    #[test]
    fn decodes_at_every_split_point() {
        let input =
            b": hi\r\ndata: A\r\ndata: B\r\n\r\nevent: error\ndata:{\"x\":1}\n\ndata: [DONE]\r\r";
        let want = vec![
            SseEvent {
                event: None,
                data: "A\nB".into(),
            },
            SseEvent {
                event: Some("error".into()),
                data: "{\"x\":1}".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ];
        for at in 0..=input.len() {
            assert_eq!(decode_split(input, at), want, "split at {at}");
        }
    }

    #[test]
    fn reads_openai_deltas() {
        let v: Value = serde_json::from_str(
            r#"{"model":"m","choices":[{"index":0,"delta":{"content":"Hi","reasoning_content":"r"},"finish_reason":null}]}"#,
        )
        .unwrap();
        let d = Delta::from_chunk(&v);
        assert_eq!(d.content.as_deref(), Some("Hi"));
        assert_eq!(d.reasoning.as_deref(), Some("r"));
        assert_eq!(d.finish_reason, None);
        let v: Value = serde_json::from_str(
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"total_tokens":3}}"#,
        )
        .unwrap();
        let d = Delta::from_chunk(&v);
        assert_eq!(d.finish_reason.as_deref(), Some("stop"));
        assert!(d.usage.is_some());
    }
}
