//! Shared test helpers: an in-process emulator as upstream, the app on
//! loopback port 0, and a streaming client that stamps every chunk.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use firsttoken_refapp::{AppState, Config, Options, serve};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(20);

pub fn unique(prefix: &str) -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).expect("randomness");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{prefix}{hex}")
}

pub fn email() -> String {
    format!("{}@bench.invalid", unique("load-"))
}

/// An emulator (upstream) on loopback.
pub struct Emulator {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
}

impl Emulator {
    pub async fn start(ttft_ms: u64, itl_ms: u64, tokens: u32) -> Emulator {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let settings = firsttoken_emulator::Settings {
            ttft: Duration::from_millis(ttft_ms),
            itl: Duration::from_millis(itl_ms),
            tokens,
            ..Default::default()
        };
        let app = firsttoken_emulator::app(settings);
        tokio::spawn(firsttoken_emulator::serve(
            listener,
            app,
            None,
            shutdown.clone(),
        ));
        Emulator { addr, shutdown }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The app on loopback.
pub struct App {
    pub addr: SocketAddr,
    pub state: AppState,
    pub shutdown: CancellationToken,
    pub server: Option<JoinHandle<Result<(), firsttoken_refapp::RefappError>>>,
    pub http: reqwest::Client,
    _dir: Option<tempfile::TempDir>,
}

/// Options for a SQLite app in a fresh temporary directory.
pub fn sqlite_options(upstream: &str) -> (Options, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = Options {
        database_url: dir.path().join("refapp.db").display().to_string(),
        upstream_url: upstream.to_string(),
        ..Options::default()
    };
    (o, dir)
}

impl App {
    pub async fn start(options: Options) -> App {
        Self::start_with_dir(options, None).await
    }

    pub async fn sqlite(upstream: &str, tweak: impl FnOnce(&mut Options)) -> App {
        let (mut o, dir) = sqlite_options(upstream);
        tweak(&mut o);
        Self::start_with_dir(o, Some(dir)).await
    }

    async fn start_with_dir(options: Options, dir: Option<tempfile::TempDir>) -> App {
        let config = Config::new(options).expect("valid config");
        let state = tokio::time::timeout(WAIT, AppState::new(config))
            .await
            .expect("app opens in time")
            .expect("app opens");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(listener, state.clone(), shutdown.clone()));
        App {
            addr,
            state,
            shutdown,
            server: Some(server),
            http: client(),
            _dir: dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sign up a new `@bench.invalid` user: (user id, token).
    pub async fn user(&self) -> (i64, String) {
        let r = self
            .post_json(
                "/api/auth/signup",
                None,
                &serde_json::json!({"email": email(), "password": "correct horse battery"}),
            )
            .await;
        assert_eq!(r.0, StatusCode::CREATED, "{}", r.1);
        (
            r.1["user_id"].as_i64().expect("user_id"),
            r.1["token"].as_str().expect("token").to_string(),
        )
    }

    pub async fn post_json(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (StatusCode, Value, HeaderMap) {
        self.post_raw(path, token, body.to_string().into_bytes())
            .await
    }

    pub async fn post_raw(
        &self,
        path: &str,
        token: Option<&str>,
        body: Vec<u8>,
    ) -> (StatusCode, Value, HeaderMap) {
        let mut req = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = tokio::time::timeout(WAIT, req.send())
            .await
            .expect("answered in time")
            .expect("request");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = tokio::time::timeout(WAIT, resp.text())
            .await
            .expect("body in time")
            .expect("body");
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v, headers)
    }

    pub async fn get_json(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        let mut req = self.http.get(self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = tokio::time::timeout(WAIT, req.send())
            .await
            .expect("answered in time")
            .expect("request");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// POST an ask body and read the whole stream, stamping each chunk.
    pub async fn ask(&self, path: &str, token: &str, body: Value) -> Streamed {
        read_stream(
            self.http
                .post(self.url(path))
                .bearer_auth(token)
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }

    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(s) = self.server.take() {
            let r = tokio::time::timeout(WAIT, s)
                .await
                .expect("server stops in time");
            assert!(matches!(r, Ok(Ok(()))), "server ended with {r:?}");
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// One event of the app's SSE stream, with the moment its last byte arrived.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    pub comment: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    /// Index of the body chunk that completed it.
    pub chunk: usize,
}

#[derive(Debug)]
pub struct Streamed {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub sent: Instant,
    pub headers_at: Instant,
    pub chunks: Vec<(Instant, Bytes)>,
    pub end: Instant,
    pub events: Vec<Event>,
    pub body: String,
}

pub async fn read_stream(req: reqwest::RequestBuilder) -> Streamed {
    read_stream_telling(req, None).await
}

/// [`read_stream`], telling `opened` when the response's headers arrived
/// (the stream is open).
pub async fn read_stream_telling(
    req: reqwest::RequestBuilder,
    opened: Option<tokio::sync::oneshot::Sender<()>>,
) -> Streamed {
    let sent = Instant::now();
    let mut resp = tokio::time::timeout(WAIT, req.send())
        .await
        .expect("headers in time")
        .expect("request");
    let headers_at = Instant::now();
    if let Some(opened) = opened {
        let _ = opened.send(());
    }
    let status = resp.status();
    let headers = resp.headers().clone();
    let mut chunks = Vec::new();
    loop {
        let c = tokio::time::timeout(WAIT, resp.chunk())
            .await
            .expect("chunk in time")
            .expect("chunk");
        match c {
            Some(b) => chunks.push((Instant::now(), b)),
            None => break,
        }
    }
    let end = Instant::now();
    let mut events = Vec::new();
    let mut buf = String::new();
    let mut body = String::new();
    for (i, (at, b)) in chunks.iter().enumerate() {
        let s = String::from_utf8_lossy(b);
        body.push_str(&s);
        buf.push_str(&s);
        while let Some(pos) = buf.find("\n\n") {
            let block: String = buf.drain(..pos + 2).collect();
            let mut ev = Event {
                at: *at,
                comment: None,
                event: None,
                data: None,
                chunk: i,
            };
            for line in block.lines() {
                if let Some(c) = line.strip_prefix(':') {
                    ev.comment = Some(c.trim().to_string());
                } else if let Some(e) = line.strip_prefix("event: ") {
                    ev.event = Some(e.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    ev.data = Some(d.to_string());
                }
            }
            events.push(ev);
        }
    }
    Streamed {
        status,
        headers,
        sent,
        headers_at,
        chunks,
        end,
        events,
        body,
    }
}

impl Streamed {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON chunks (data events other than [DONE]).
    pub fn chunks_json(&self) -> Vec<(Value, &Event)> {
        self.events
            .iter()
            .filter(|e| e.event.is_none())
            .filter_map(|e| {
                let d = e.data.as_deref()?;
                serde_json::from_str(d).ok().map(|v| (v, e))
            })
            .collect()
    }

    /// The concatenated content deltas.
    pub fn content(&self) -> String {
        self.chunks_json()
            .iter()
            .filter_map(|(v, _)| {
                v.pointer("/choices/0/delta/content")?
                    .as_str()
                    .map(String::from)
            })
            .collect()
    }

    /// The first event with non-empty content.
    pub fn first_content(&self) -> Option<&Event> {
        self.chunks_json()
            .into_iter()
            .find(|(v, _)| {
                v.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            })
            .map(|(_, e)| e)
    }

    pub fn done(&self) -> Option<&Event> {
        self.events
            .iter()
            .find(|e| e.data.as_deref() == Some("[DONE]"))
    }

    /// The `: firsttoken-refapp {...}` comment.
    pub fn meta(&self) -> Value {
        let c = self
            .events
            .iter()
            .find_map(|e| e.comment.as_deref()?.strip_prefix("firsttoken-refapp "))
            .expect("meta comment");
        serde_json::from_str(c).expect("meta JSON")
    }

    pub fn server_timing_header(&self) -> HashMap<String, f64> {
        parse_timing(self.header("server-timing").unwrap_or(""))
    }

    pub fn server_timing_event(&self) -> HashMap<String, f64> {
        let e = self
            .events
            .iter()
            .find(|e| e.event.as_deref() == Some("server-timing"))
            .expect("server-timing event");
        parse_timing(e.data.as_deref().unwrap_or(""))
    }

    pub fn error_events(&self) -> Vec<Value> {
        self.events
            .iter()
            .filter(|e| e.event.as_deref() == Some("error"))
            .filter_map(|e| serde_json::from_str(e.data.as_deref()?).ok())
            .collect()
    }

    pub fn usage(&self) -> Option<Value> {
        self.chunks_json()
            .into_iter()
            .find_map(|(v, _)| v.get("usage").cloned())
    }
}

/// `name;dur=1.2, other;dur=3` → {name: 1.2, other: 3}.
pub fn parse_timing(s: &str) -> HashMap<String, f64> {
    s.split(',')
        .filter_map(|part| {
            let mut it = part.trim().split(';');
            let name = it.next()?.trim().to_string();
            let dur = it.find_map(|p| p.trim().strip_prefix("dur="))?;
            Some((name, dur.parse().ok()?))
        })
        .collect()
}

/// A loopback port with nothing listening on it.
pub async fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let a = l.local_addr().expect("addr");
    drop(l);
    a
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
