//! Shared helpers for the drive integration tests: a scripted raw HTTP/1.1
//! server, a silent server, a connection-counting TCP proxy, the emulator on
//! a loopback port, a probe runner with a deadline and the phase-order check.
//!
//! Every server binds `127.0.0.1:0` and every wait is bounded, so a bug shows
//! up as a failed assertion, never as a hung test run.
#![allow(dead_code)] // Each test file uses a different part of this module.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::{ConnectionMode, ProbeSpec, RequestTemplate, Resolve, StreamFormat, Target};
use firsttoken_record::Sample;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// Longest a whole probe may take in a test before it counts as hung.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(30);

/// A chunk of the response body: wait `delay` after the previous write, then
/// send `bytes` as one HTTP/1.1 chunk in one TCP write.
pub type Chunk = (Duration, Vec<u8>);

/// How a scripted response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Send the last chunk (`0\r\n\r\n`) and keep the connection for the next request.
    Complete,
    /// Close the connection without the last chunk: a stream cut mid-way.
    Abort,
    /// Send nothing more and keep the connection open until the client goes away.
    Hang,
    /// Send the last chunk, then close the connection (pair it with `connection: close`).
    Close,
}

/// A scripted HTTP/1.1 response, sent with `Transfer-Encoding: chunked`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Chunk>,
    pub ending: Ending,
}

impl Reply {
    /// A 200 response with this Content-Type and body script, ended cleanly.
    pub fn ok(content_type: &str, chunks: Vec<Chunk>) -> Reply {
        Reply {
            status: 200,
            content_type: content_type.to_string(),
            headers: Vec::new(),
            chunks,
            ending: Ending::Complete,
        }
    }

    /// The same reply with an extra response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The same reply with another ending.
    pub fn ending(mut self, ending: Ending) -> Reply {
        self.ending = ending;
        self
    }

    /// The same reply with another status.
    pub fn status(mut self, status: u16) -> Reply {
        self.status = status;
        self
    }
}

/// Chunks sent back to back, without delay.
pub fn at_once<I, B>(parts: I) -> Vec<Chunk>
where
    I: IntoIterator<Item = B>,
    B: Into<Vec<u8>>,
{
    parts
        .into_iter()
        .map(|p| (Duration::ZERO, p.into()))
        .collect()
}

/// One SSE event with a single `data` line, LF line endings.
pub fn sse(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// One SSE event with an `event` name.
pub fn sse_named(event: &str, data: &str) -> Vec<u8> {
    format!("event: {event}\ndata: {data}\n\n").into_bytes()
}

/// An OpenAI chat chunk whose delta is `delta` (a JSON object).
pub fn oa_delta(delta: &str) -> Vec<u8> {
    sse(&format!(
        r#"{{"id":"c1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
    ))
}

/// An OpenAI chat chunk carrying `text` as content.
pub fn oa_content(text: &str) -> Vec<u8> {
    oa_delta(&format!(r#"{{"content":{}}}"#, serde_json::json!(text)))
}

/// The role-only first chunk OpenAI sends.
pub fn oa_role() -> Vec<u8> {
    oa_delta(r#"{"role":"assistant","content":""}"#)
}

/// The final OpenAI chunk with `usage`.
pub fn oa_usage(prompt: u64, completion: u64) -> Vec<u8> {
    sse(&format!(
        r#"{{"id":"c1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}}}"#,
        prompt + completion
    ))
}

/// `data: [DONE]`.
pub fn oa_done() -> Vec<u8> {
    sse("[DONE]")
}

/// A scripted server: every request on every connection gets `reply`.
pub struct ScriptServer {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl ScriptServer {
    /// `http://127.0.0.1:PORT/v1/chat/completions`.
    pub fn url(&self) -> String {
        format!("http://{}/v1/chat/completions", self.addr)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Requests read so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve `reply` on a fresh loopback port.
pub async fn script_server(reply: Reply) -> ScriptServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let reply = Arc::new(reply);
    let (c, r) = (connections.clone(), requests.clone());
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let _ = tcp.set_nodelay(true);
            tokio::spawn(serve_connection(tcp, reply.clone(), r.clone()));
        }
    });
    ScriptServer {
        addr,
        connections,
        requests,
        task,
    }
}

/// Read one request (head and Content-Length body). `None` at EOF or on garbage.
async fn read_request(tcp: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = tcp.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = tcp.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some(buf)
}

async fn serve_connection(mut tcp: TcpStream, reply: Arc<Reply>, requests: Arc<AtomicUsize>) {
    while read_request(&mut tcp).await.is_some() {
        requests.fetch_add(1, Ordering::SeqCst);
        let mut head = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\nx-request-id: script-{}\r\n",
            reply.status,
            reason(reply.status),
            reply.content_type,
            requests.load(Ordering::SeqCst)
        );
        for (n, v) in &reply.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if tcp.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for (delay, bytes) in &reply.chunks {
            if !delay.is_zero() {
                tokio::time::sleep(*delay).await;
            }
            let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
            frame.extend_from_slice(bytes);
            frame.extend_from_slice(b"\r\n");
            if tcp.write_all(&frame).await.is_err() {
                return;
            }
        }
        match reply.ending {
            Ending::Complete => {
                if tcp.write_all(b"0\r\n\r\n").await.is_err() {
                    return;
                }
            }
            Ending::Close => {
                let _ = tcp.write_all(b"0\r\n\r\n").await;
                let _ = tcp.shutdown().await;
                return;
            }
            Ending::Abort => {
                let _ = tcp.shutdown().await;
                return;
            }
            Ending::Hang => {
                // Wait for the client to give up; whatever it sends is ignored.
                let mut sink = [0u8; 1024];
                while let Ok(n) = tcp.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
                return;
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// A listener that accepts connections and never writes a byte.
pub struct SilentServer {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start a [`SilentServer`]; accepted sockets stay open as long as it runs.
pub async fn silent_server() -> SilentServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    SilentServer { addr, task }
}

/// A TCP proxy that counts the connections it accepts and pipes each to `upstream`.
pub struct CountingProxy {
    pub addr: SocketAddr,
    count: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl CountingProxy {
    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start a [`CountingProxy`] in front of `upstream`.
pub async fn counting_proxy(upstream: SocketAddr) -> CountingProxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut down, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let _ = down.set_nodelay(true);
            tokio::spawn(async move {
                let Ok(mut up) = TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = up.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
            });
        }
    });
    CountingProxy { addr, count, task }
}

/// The emulator serving on a loopback port until dropped.
pub struct Emulator {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.task.abort();
    }
}

/// Serve the emulator with `settings`, over TLS when `tls` is given.
pub async fn emulator(
    settings: firsttoken_emulator::Settings,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Emulator {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(firsttoken_emulator::serve(
        listener,
        firsttoken_emulator::app(settings),
        tls,
        shutdown.clone(),
    ));
    Emulator {
        addr,
        shutdown,
        task,
    }
}

/// A test PKI: a CA and a leaf for "localhost" signed by it.
pub struct Pki {
    pub ca_pem: String,
    pub leaf_pem: String,
    pub leaf_key_pem: String,
}

pub fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "firsttoken test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key")).expect("CA");
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("leaf params");
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf = leaf.signed_by(&leaf_key, &ca).expect("leaf");
    Pki {
        ca_pem: ca.pem(),
        leaf_pem: leaf.pem(),
        leaf_key_pem: leaf_key.serialize_pem(),
    }
}

/// The emulator over TLS with a fresh PKI.
pub async fn tls_emulator(settings: firsttoken_emulator::Settings) -> (Emulator, Pki) {
    let pki = pki();
    let cfg: Arc<rustls::ServerConfig> = firsttoken_emulator::tls_server_config(
        pki.leaf_pem.as_bytes(),
        pki.leaf_key_pem.as_bytes(),
    )
    .expect("server TLS config");
    (emulator(settings, Some(cfg)).await, pki)
}

/// A spec for `https://localhost:PORT/...`, resolved to 127.0.0.1 without DNS
/// (so an IPv6-first `localhost` cannot matter), trusting the test CA.
pub fn tls_spec(emu: &Emulator, pki: &Pki) -> ProbeSpec {
    let port = emu.addr.port();
    let mut s = spec(&format!("https://localhost:{port}/v1/chat/completions"));
    s.resolve = vec![Resolve {
        host: "localhost".into(),
        port,
        addr: emu.addr.ip(),
    }];
    s.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
    s
}

/// The request body the emulator expects for a stream.
pub const CHAT_BODY: &str =
    r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// A one-request spec for `url`, fresh connection, POSTing [`CHAT_BODY`].
pub fn spec(url: &str) -> ProbeSpec {
    let target = Target::parse(url).expect("test URL parses");
    let request = RequestTemplate::new(target, None, Some(CHAT_BODY.as_bytes().to_vec().into()))
        .expect("request template");
    let mut spec = ProbeSpec::new(request);
    spec.mode = ConnectionMode::Fresh;
    spec
}

/// Run `spec` to the end and collect its samples, failing the test when it
/// takes longer than [`PROBE_DEADLINE`], returns an error or panics.
pub async fn probe(spec: ProbeSpec) -> Vec<Sample> {
    let (tx, mut rx) = mpsc::channel(256);
    let run = tokio::spawn(firsttoken_drive::run_probe(
        spec,
        tx,
        CancellationToken::new(),
    ));
    let collect = async {
        let mut out = Vec::new();
        while let Some(s) = rx.recv().await {
            out.push(s);
        }
        out
    };
    let samples = tokio::time::timeout(PROBE_DEADLINE, collect)
        .await
        .expect("the probe finished within the deadline");
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("run_probe returned after its channel closed")
        .expect("run_probe did not panic")
        .expect("run_probe accepted the spec");
    samples
}

/// Run a one-request fresh probe of `url` with `format` and return its sample.
pub async fn probe_one(url: &str, format: &str) -> Sample {
    let mut s = spec(url);
    s.format = format.parse::<StreamFormat>().expect("format parses");
    let mut samples = probe(s).await;
    assert_eq!(samples.len(), 1, "one request, one sample: {samples:#?}");
    samples.remove(0)
}

/// Samples that count (warm-ups left out).
pub fn counted(samples: &[Sample]) -> Vec<&Sample> {
    samples.iter().filter(|s| !s.warmup).collect()
}

/// The error kind as its JSON name, `None` for success.
pub fn kind(s: &Sample) -> Option<&'static str> {
    s.error.as_ref().map(|e| e.kind.as_str())
}

/// Assert the sample succeeded, with the whole sample in the message if not.
#[track_caller]
pub fn assert_ok(s: &Sample) {
    assert!(s.is_ok(), "expected success: {s:#?}");
    assert_eq!(s.status, Some(200), "{s:#?}");
}

/// Assert the sample failed with `kind`, returning its message.
#[track_caller]
pub fn assert_failed<'a>(s: &'a Sample, kind: &str) -> &'a str {
    let e = s
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected a {kind} error: {s:#?}"));
    assert_eq!(e.kind.as_str(), kind, "{s:#?}");
    assert!(!e.message.is_empty(), "an error has a message: {s:#?}");
    &e.message
}

/// Stamps present in a sample must follow the order a request passes them:
/// dns ≤ connect ≤ tls ≤ sent ≤ ttfb ≤ headers ≤ ttfe ≤ ttft ≤ last_token ≤ e2e,
/// and a first reasoning token lies between the headers and the end.
#[track_caller]
pub fn assert_phase_order(s: &Sample) {
    let chain = [
        ("dns", s.dns_ms),
        ("connect", s.connect_ms),
        ("tls", s.tls_ms),
        ("sent", s.sent_ms),
        ("ttfb", s.ttfb_ms),
        ("headers", s.headers_ms),
        ("ttfe", s.ttfe_ms),
        ("ttft", s.ttft_ms),
        ("last_token", s.last_token_ms),
        ("e2e", s.e2e_ms),
    ];
    let present: Vec<(&str, f64)> = chain
        .iter()
        .filter_map(|(n, v)| v.map(|v| (*n, v)))
        .collect();
    for (name, v) in &present {
        assert!(
            v.is_finite() && *v >= 0.0,
            "{name} = {v} is not a time: {s:#?}"
        );
    }
    for w in present.windows(2) {
        assert!(
            w[0].1 <= w[1].1,
            "{} ({} ms) comes after {} ({} ms): {s:#?}",
            w[0].0,
            w[0].1,
            w[1].0,
            w[1].1
        );
    }
    if let (Some(r), Some(h), Some(e)) = (s.ttfr_ms, s.headers_ms, s.e2e_ms) {
        assert!(
            h <= r && r <= e,
            "ttfr {r} not within headers {h}..e2e {e}: {s:#?}"
        );
    }
}
