//! Kernel receive timestamps against a deliberately starved client (issue
//! 13): the client's runtime thread shares its one core with a busy loop
//! that holds it for 15 ms at a time, so every byte waits in the socket
//! until the loop lets go. The kernel-stamped first-token time must still
//! match the server's own to within 1 ms, the user-space stamp must not,
//! and the analysis must flag the session's client as overloaded, with the
//! report saying what that means.
//!
//! The ground truth is a plain-thread HTTP/1.1 server on loopback that
//! brackets each write with its own clock: the first token was sent
//! between `before` and `after` of its write, the headers likewise, so the
//! true header-to-token interval lies in
//! `[tok.before − head.after, tok.after − head.before]`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use firsttoken_analyze::diagnose::client_clock;
use firsttoken_analyze::{Direction, Frame, Settings, analyze};
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::{Clock, Destination, PhaseKind, Sample, UtcTime};

const TTFT: Duration = Duration::from_millis(40);
/// Longer than [`HOG`], so the first token usually has its read to itself
/// (when the next token is already waiting, the read's stamp is the later
/// segment's: the method's TCP limit, counted in `ttft_read_events`).
const ITL: Duration = Duration::from_millis(25);
const TOKENS: usize = 4;
const REQUESTS: u64 = 120;
const STREAMS: u32 = 8;
/// How long the busy loop holds the client's core at a time.
const HOG: Duration = Duration::from_millis(12);

/// Per request id: the true header-to-first-token interval, `(min, max)` ms.
type Truth = Arc<Mutex<HashMap<String, (f64, f64)>>>;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One HTTP/1.1 chunk in one write (one segment).
fn chunk(out: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    let mut c = format!("{:x}\r\n", data.len()).into_bytes();
    c.extend_from_slice(data);
    c.extend_from_slice(b"\r\n");
    out.write_all(&c)?;
    out.flush()
}

fn content(text: &str) -> Vec<u8> {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
        .into_bytes()
}

/// Serve requests on one keep-alive connection until the client closes it.
fn serve(conn: TcpStream, truth: Truth, next: Arc<Mutex<u64>>) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let id = {
            let mut n = next.lock().unwrap();
            *n += 1;
            format!("r{n}")
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: {id}\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let h0 = Instant::now();
        out.write_all(head.as_bytes())?;
        out.flush()?;
        let h1 = Instant::now();
        std::thread::sleep(TTFT);
        let t0 = Instant::now();
        chunk(&mut out, &content("a"))?;
        let t1 = Instant::now();
        truth.lock().unwrap().insert(
            id,
            (
                ms(t0.saturating_duration_since(h1)),
                ms(t1.saturating_duration_since(h0)),
            ),
        );
        for _ in 1..TOKENS {
            std::thread::sleep(ITL);
            chunk(&mut out, &content("b"))?;
        }
        chunk(&mut out, b"data: [DONE]\n\n")?;
        out.write_all(b"0\r\n\r\n")?;
        out.flush()?;
    }
}

fn ground_truth_server() -> (String, Truth) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let truth: Truth = Arc::default();
    let next = Arc::new(Mutex::new(0u64));
    let t = truth.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (t, n) = (t.clone(), next.clone());
            std::thread::spawn(move || serve(conn, t, n));
        }
    });
    (url, truth)
}

/// Run the probe on a one-thread runtime; with `starve`, a task on the same
/// thread busy-loops for [`HOG`] at a time, yielding in between.
fn probe(url: &str, starve: bool) -> Vec<Sample> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut spec = ProbeSpec::new(
        RequestTemplate::new(
            Target::parse(url).unwrap(),
            None,
            Some(body.to_vec().into()),
        )
        .unwrap(),
    );
    spec.requests = REQUESTS;
    spec.concurrency = STREAMS;
    spec.timeouts.request = Duration::from_secs(30);
    rt.block_on(async {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hog = starve.then(|| {
            let done = done.clone();
            tokio::spawn(async move {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let until = Instant::now() + HOG;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    tokio::task::yield_now().await;
                }
            })
        });
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let cancel = tokio_util::sync::CancellationToken::new();
        let run = tokio::spawn(firsttoken_drive::run_probe(spec, tx, cancel));
        let mut out = Vec::new();
        while let Some(s) = rx.recv().await {
            out.push(s);
        }
        run.await.unwrap().unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = hog {
            h.await.unwrap();
        }
        out.into_iter().filter(|s| !s.warmup).collect()
    })
}

/// Distance of `x` from the interval `[lo, hi]` (0 inside).
fn outside(x: f64, (lo, hi): (f64, f64)) -> f64 {
    (lo - x).max(x - hi).max(0.0)
}

fn session(id: &str) -> SessionMeta {
    let now = UtcTime::now();
    SessionMeta {
        id: id.into(),
        started_at: now,
        ended_at: Some(now),
        status: SessionStatus::Complete,
        spec: serde_json::Value::Null,
        seed: 13,
        tool_version: "test".into(),
        host: "test".into(),
        pid: None,
        labels: Labels::default(),
        provenance: Provenance::Measured,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

fn rows(id: &str, samples: &[Sample]) -> Vec<SampleRow> {
    samples
        .iter()
        .map(|s| SampleRow {
            session_id: id.into(),
            phase: PhaseKind::Warm,
            dest: Destination::from_columns(PhaseKind::Warm, None, None).unwrap(),
            concurrency: None,
            intended_start_ms: None,
            actual_start_ms: 0.0,
            started_at: UtcTime::now(),
            provenance: Provenance::Measured,
            prompt: None,
            sample: s.clone(),
        })
        .collect()
}

#[test]
fn a_starved_client_is_flagged_while_kernel_stamps_stay_within_a_millisecond() {
    let (url, truth) = ground_truth_server();
    let samples = probe(&url, true);
    assert_eq!(samples.len() as u64, REQUESTS);
    let truth = truth.lock().unwrap().clone();
    let (mut kernel_worst, mut user_worst, mut shared) = (0.0f64, 0.0f64, 0);
    for s in &samples {
        assert!(s.is_ok(), "{:?}", s.error);
        assert_eq!(
            s.clock,
            Some(Clock::Kernel),
            "kernel timestamps were not used"
        );
        let id = s.request_id.as_deref().expect("request id");
        let interval = truth[id];
        let ttfb = s.ttfb_ms.expect("ttfb");
        let kernel = s.ttft_ms.expect("ttft") - ttfb;
        let user = s.ttft_user_ms.expect("user ttft") - ttfb;
        user_worst = user_worst.max(outside(user, interval));
        assert!(s.client_lag_ms.is_some());
        assert!(
            kernel <= user,
            "a kernel stamp later than the user-space one"
        );
        // A read that also carried the next token, or the response head
        // (the client was late for both), is stamped with its last
        // segment: the method's TCP limit, not an error of the clock.
        let alone = s.ttft_read_events == Some(1) && s.ttft_ms != s.ttfb_ms;
        if alone {
            kernel_worst = kernel_worst.max(outside(kernel, interval));
        } else {
            shared += 1;
        }
    }
    assert!(
        shared * 2 <= samples.len(),
        "{shared} of {} first tokens shared their read",
        samples.len()
    );
    eprintln!(
        "kernel-stamped error at most {kernel_worst:.3} ms, user-space at most {user_worst:.3} ms, \
         {shared} shared first-token reads"
    );
    assert!(
        kernel_worst < 1.0,
        "a kernel-stamped TTFT was {kernel_worst:.3} ms off the server's own"
    );
    // The user-space stamps of the same requests carry the starvation.
    assert!(
        user_worst > 5.0,
        "the busy loop did not starve the client (user-space error at most {user_worst:.3} ms)"
    );

    // The analysis flags the session's client as overloaded …
    let meta = vec![session("starved")];
    let rows = rows("starved", &samples);
    let frame = Frame::from_rows(&rows, &meta).unwrap();
    let settings = Settings::new(13);
    let clock = client_clock(&frame, &meta, &settings);
    let c = &clock.sessions[0];
    assert_eq!(
        (c.kernel, c.user, c.lag_n),
        (REQUESTS as usize, 0, REQUESTS as usize)
    );
    assert_eq!(c.verdict, Direction::Increase, "{c:?}");
    // … and the report says what that means, in the claims.
    let analysis = analyze(&frame, &meta, &[], &settings);
    let text = firsttoken_report::words::limit_lines(&analysis.limits).join("\n");
    assert!(
        text.contains("the measuring client was overloaded")
            && text.contains("requests were sent late"),
        "{text}"
    );
}
