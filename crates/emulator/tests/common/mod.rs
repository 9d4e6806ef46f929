//! Test support: an emulator on 127.0.0.1:0 with an in-memory truth log,
//! and a tiny HTTP/1.1 client that stamps every read and decodes chunked
//! bodies and SSE events (no dependency on firsttoken's own client).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use firsttoken_emulator::{Profile, Settings, TruthLog, TruthRecord, app, serve};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Longest any single test request may take unless it says otherwise.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A running emulator; stopped when dropped.
pub struct Emu {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    truth: mpsc::Receiver<TruthRecord>,
    /// Records received but not yet asked for.
    unclaimed: Vec<TruthRecord>,
}

impl Drop for Emu {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub fn profile(toml: &str) -> Profile {
    Profile::from_toml(toml, "test profile").expect("test profile is valid")
}

pub async fn start(mut settings: Settings) -> Emu {
    let (log, truth) = TruthLog::in_memory();
    settings.truth = log;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(listener, app(settings), None, shutdown.clone()));
    Emu {
        addr,
        shutdown,
        truth,
        unclaimed: Vec::new(),
    }
}

pub async fn start_with(toml: &str, seed: u64) -> Emu {
    start(Settings {
        profile: Some(profile(toml)),
        seed,
        ..Settings::default()
    })
    .await
}

impl Emu {
    /// The truth record of request `id`, waiting up to 5 s for it.
    pub async fn truth_of(&mut self, id: &str) -> TruthRecord {
        self.truth_where(|r| r.request_id == id).await
    }

    async fn truth_where(&mut self, f: impl Fn(&TruthRecord) -> bool) -> TruthRecord {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            while let Ok(r) = self.truth.try_recv() {
                self.unclaimed.push(r);
            }
            if let Some(i) = self.unclaimed.iter().position(&f) {
                return self.unclaimed.remove(i);
            }
            assert!(
                Instant::now() < until,
                "no matching truth record; saw {:?}",
                self.unclaimed
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn chat(&self, headers: &[(&str, &str)], body: Value) -> Reply {
        post(self.addr, "/v1/chat/completions", headers, &body, DEADLINE).await
    }
}

/// Response headers, names lower-cased.
type Headers = Vec<(String, String)>;

/// One response as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The decoded body.
    pub body: Vec<u8>,
    /// The body ended properly (terminating chunk, or full Content-Length).
    pub complete: bool,
    /// The deadline passed before the server closed the connection.
    pub timed_out: bool,
    /// From the request written to the first response byte.
    pub first_byte: Option<Duration>,
    /// SSE `data:` payloads with the time (from the request written) of
    /// the read that completed them.
    pub events: Vec<(Duration, String)>,
    /// When each read returned bytes, from the request written.
    pub reads: Vec<Duration>,
    /// From the request written to the connection's end.
    pub elapsed: Duration,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The SSE events that are JSON objects.
    pub fn chunks(&self) -> Vec<Value> {
        self.events
            .iter()
            .filter_map(|(_, d)| serde_json::from_str(d).ok())
            .collect()
    }

    pub fn done(&self) -> bool {
        self.events.iter().any(|(_, d)| d == "[DONE]")
    }

    /// Time of the first event with non-empty content.
    pub fn ttft(&self) -> Option<Duration> {
        self.events.iter().find_map(|(t, d)| {
            let v: Value = serde_json::from_str(d).ok()?;
            let c = v["choices"][0]["delta"]["content"].as_str()?;
            (!c.is_empty()).then_some(*t)
        })
    }

    /// Content events.
    pub fn content_times(&self) -> Vec<Duration> {
        self.events
            .iter()
            .filter_map(|(t, d)| {
                let v: Value = serde_json::from_str(d).ok()?;
                let c = v["choices"][0]["delta"]["content"].as_str()?;
                (!c.is_empty()).then_some(*t)
            })
            .collect()
    }

    pub fn id(&self) -> String {
        self.header("x-request-id")
            .expect("x-request-id")
            .to_string()
    }

    /// The `usage` of the last chunk carrying one.
    pub fn usage(&self) -> Value {
        self.chunks()
            .into_iter()
            .rev()
            .find_map(|c| c.get("usage").cloned())
            .expect("a chunk with usage")
    }
}

/// Incremental chunked-transfer decoder.
#[derive(Default)]
struct Chunked {
    pos: usize,
    done: bool,
}

impl Chunked {
    fn feed(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        while !self.done {
            let rest = &raw[self.pos..];
            let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
                return;
            };
            let line = std::str::from_utf8(&rest[..eol]).expect("chunk size line");
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .expect("hex chunk size");
            if size == 0 {
                self.done = true;
                return;
            }
            let start = eol + 2;
            if rest.len() < start + size + 2 {
                return;
            }
            out.extend_from_slice(&rest[start..start + size]);
            self.pos += start + size + 2;
        }
    }
}

/// POST `body` as JSON with `Connection: close`, read to EOF (or
/// `deadline`), stamping every read.
pub async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
    deadline: Duration,
) -> Reply {
    let body = body.to_string();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut tcp = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .expect("connect in time")
        .expect("connect");
    tcp.write_all(req.as_bytes()).await.expect("write");
    let sent = Instant::now();
    let end = sent + deadline;

    let mut raw: Vec<u8> = Vec::new();
    let mut head: Option<(u16, Headers, usize)> = None;
    let mut chunked: Option<Chunked> = None;
    let mut body_out: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut ev_pos = 0;
    let mut reads = Vec::new();
    let mut first_byte = None;
    let mut timed_out = false;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match tokio::time::timeout_at(end.into(), tcp.read(&mut buf)).await {
            Err(_) => {
                timed_out = true;
                break;
            }
            Ok(Err(_)) | Ok(Ok(0)) => break,
            Ok(Ok(n)) => n,
        };
        let at = sent.elapsed();
        first_byte.get_or_insert(at);
        reads.push(at);
        raw.extend_from_slice(&buf[..n]);
        if head.is_none()
            && let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let text = String::from_utf8_lossy(&raw[..p]).to_string();
            let mut lines = text.split("\r\n");
            let status = lines
                .next()
                .and_then(|l| l.split(' ').nth(1))
                .and_then(|s| s.parse().ok())
                .expect("status line");
            let hs: Headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            if hs
                .iter()
                .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
            {
                chunked = Some(Chunked::default());
            }
            head = Some((status, hs, p + 4));
        }
        if let Some((_, _, start)) = &head {
            match &mut chunked {
                Some(c) => c.feed(&raw[*start..], &mut body_out),
                None => body_out = raw[*start..].to_vec(),
            }
            while let Some(p) = body_out[ev_pos..].windows(2).position(|w| w == b"\n\n") {
                let ev = String::from_utf8_lossy(&body_out[ev_pos..ev_pos + p]).to_string();
                for line in ev.lines() {
                    if let Some(d) = line.strip_prefix("data:") {
                        events.push((at, d.trim().to_string()));
                    }
                }
                ev_pos += p + 2;
            }
        }
    }
    let elapsed = sent.elapsed();
    let (status, headers, _) = head.unwrap_or((0, Vec::new(), 0));
    let complete = match &chunked {
        Some(c) => c.done,
        None => headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .is_some_and(|len| len == body_out.len()),
    };
    Reply {
        status,
        headers,
        body: body_out,
        complete,
        timed_out,
        first_byte,
        events,
        reads,
        elapsed,
    }
}

/// A chat request body.
pub fn chat_body(prompt: &str, stream: bool, provider: Option<Value>) -> Value {
    let mut v = serde_json::json!({
        "model": "m",
        "stream": stream,
        "messages": [{"role": "user", "content": prompt}],
    });
    if let Some(p) = provider {
        v["provider"] = p;
    }
    v
}

/// Three providers with fast, fixed timing and distinct prices.
pub const THREE: &str = r#"
order = ["alpha", "beta", "gamma"]
tokens_min = 5
tokens_max = 5

[[provider]]
name = "alpha"
ttft_median_ms = 30
tokens_per_s = 200
price_input_per_mtok = 3.0
price_output_per_mtok = 15.0

[[provider]]
name = "beta"
ttft_median_ms = 40
tokens_per_s = 200
price_input_per_mtok = 0.5
price_output_per_mtok = 2.0

[[provider]]
name = "gamma"
ttft_median_ms = 50
tokens_per_s = 200
price_input_per_mtok = 0.0
price_output_per_mtok = 1.0
"#;
