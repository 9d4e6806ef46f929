//! Every stream ends in a named outcome, and the client stays bounded
//! whatever a server sends: the hostile cases of issue 9 against a raw
//! loopback server whose bodies are generated on the fly (never held).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use common::{assert_failed, assert_ok, probe, probe_one, spec};
use firsttoken_plan::StreamFormat;

const MIB: usize = 1 << 20;

/// A body: a prefix, then `pattern` repeated in 64 KiB writes up to `total` bytes.
#[derive(Clone)]
struct Body {
    prefix: Vec<u8>,
    pattern: Vec<u8>,
    total: usize,
}

/// A one-request HTTP/1.1 server: a 200 with `content_type` (none when
/// `None`), the body chunked. Counts the body bytes it managed to write.
async fn raw_server(content_type: Option<&str>, body: Body) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let ct = content_type.map(str::to_string);
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut tmp).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let mut head = String::from("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n");
        if let Some(ct) = ct {
            head.push_str(&format!("content-type: {ct}\r\n"));
        }
        head.push_str("\r\n");
        if tcp.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let mut piece = Vec::with_capacity(64 * 1024 + body.pattern.len());
        let mut first = true;
        let mut written = 0;
        while written < body.total || first {
            piece.clear();
            if first {
                piece.extend_from_slice(&body.prefix);
                first = false;
            }
            while piece.len() < 64 * 1024 && written + piece.len() < body.total {
                piece.extend_from_slice(&body.pattern);
            }
            if piece.is_empty() {
                break;
            }
            let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
            frame.extend_from_slice(&piece);
            frame.extend_from_slice(b"\r\n");
            if tcp.write_all(&frame).await.is_err() {
                return;
            }
            written += piece.len();
            counter.store(written as u64, Ordering::SeqCst);
        }
        let _ = tcp.write_all(b"0\r\n\r\n").await;
        // Keep the connection until the client goes.
        while let Ok(n) = tcp.read(&mut tmp).await {
            if n == 0 {
                break;
            }
        }
    });
    (url, sent)
}

fn fixed(bytes: &[u8]) -> Body {
    Body {
        prefix: bytes.to_vec(),
        pattern: Vec::new(),
        total: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vllm_error_event_then_done_is_a_stream_error() {
    let body = b"data: {\"object\":\"error\",\"message\":\"The engine is overloaded\",\"type\":\"ServiceUnavailable\",\"code\":503}\n\ndata: [DONE]\n\n";
    for ct in [Some("text/event-stream"), None] {
        let (url, _) = raw_server(ct, fixed(body)).await;
        let s = probe_one(&url, "auto").await;
        let m = assert_failed(&s, "stream_error");
        assert!(m.contains("The engine is overloaded"), "{ct:?}: {m}");
        assert_eq!(s.status, Some(200));
        assert!(s.ttft_ms.is_none() && s.e2e_ms.is_some(), "{s:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_200_without_content_type_is_no_content() {
    let (url, _) = raw_server(None, fixed(b"")).await;
    let s = probe_one(&url, "auto").await;
    let m = assert_failed(&s, "no_content");
    assert!(m.contains("0 body bytes"), "{m}");
    assert_eq!(s.status, Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_body_of_whitespace_is_no_content() {
    let body = Body {
        prefix: Vec::new(),
        pattern: b" \r\n\t      \n".to_vec(),
        total: 50 * MIB,
    };
    let (url, sent) = raw_server(None, body).await;
    let s = probe_one(&url, "auto").await;
    assert_failed(&s, "no_content");
    assert!(
        sent.load(Ordering::SeqCst) >= 50 * MIB as u64 - 64 * 1024,
        "the whole body was read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_50_mb_sse_line_fails_as_decode_early() {
    let body = Body {
        prefix: b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec(),
        pattern: b"x".repeat(1024),
        total: 50 * MIB,
    };
    let (url, sent) = raw_server(Some("text/event-stream"), body).await;
    let s = probe_one(&url, "auto").await;
    let m = assert_failed(&s, "decode");
    assert!(m.contains("over the 1048576-byte limit"), "{m}");
    // The client stopped reading near the cap (socket buffers allow some more).
    assert!(
        sent.load(Ordering::SeqCst) < 20 * MIB as u64,
        "sent {}",
        sent.load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_lines_with_no_blank_line_fail_as_decode_early() {
    let body = Body {
        prefix: Vec::new(),
        pattern: b"data: 0123456789abcdef0123456789abcdef\n".to_vec(),
        total: 200 * MIB,
    };
    let (url, sent) = raw_server(Some("text/event-stream"), body).await;
    let s = probe_one(&url, "openai-chat").await;
    let m = assert_failed(&s, "decode");
    assert!(m.contains("byte offset 0"), "{m}");
    assert!(sent.load(Ordering::SeqCst) < 20 * MIB as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_bound_is_set_by_the_spec() {
    let event = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\ndata: [DONE]\n\n",
        "y".repeat(8000)
    );
    let (url, _) = raw_server(Some("text/event-stream"), fixed(event.as_bytes())).await;
    let mut sp = spec(&url);
    sp.max_event_bytes = 4096;
    let s = probe(sp.validate().expect("valid")).await.remove(0);
    let m = assert_failed(&s, "decode");
    assert!(m.contains("4096-byte limit"), "{m}");
    let (url, _) = raw_server(Some("text/event-stream"), fixed(event.as_bytes())).await;
    assert_ok(&probe_one(&url, "auto").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_with_an_empty_or_plain_body_is_fine() {
    for body in [&b""[..], b"ok\n"] {
        let (url, _) = raw_server(None, fixed(body)).await;
        let mut sp = spec(&url);
        sp.format = StreamFormat::Text;
        let s = probe(sp).await.remove(0);
        assert_ok(&s);
        assert!(s.ttfb_ms.is_some(), "{s:#?}");
    }
}

#[tokio::test]
async fn an_ndjson_error_line_is_a_stream_error() {
    // vLLM and Ollama-style servers stream NDJSON; an error object as a line
    // is the server's refusal, not an answer without content.
    for line in [
        &b"{\"object\":\"error\",\"message\":\"The engine is overloaded\",\"type\":\"ServiceUnavailable\",\"code\":503}\n"[..],
        &b"{\"error\":\"model 'x' not found\"}\n"[..],
    ] {
        let (url, _) = raw_server(Some("application/x-ndjson"), fixed(line)).await;
        let s = probe_one(&url, "auto").await;
        let m = assert_failed(&s, "stream_error");
        assert!(m.contains("overloaded") || m.contains("not found"), "{m}");
        assert!(s.ttft_ms.is_none(), "{s:#?}");
    }
}

#[tokio::test]
async fn a_json_error_body_with_200_is_a_stream_error() {
    // A gateway that answers a streaming request with one JSON error body
    // and status 200: the user saw no answer.
    let body = br#"{"error":{"message":"Invalid API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let (url, _) = raw_server(Some("application/json"), fixed(body)).await;
    let s = probe_one(&url, "auto").await;
    let m = assert_failed(&s, "stream_error");
    assert!(m.contains("Invalid API key"), "{m}");
}

#[tokio::test]
async fn the_route_is_read_from_the_header_the_path_names() {
    // Issue 10: an app that reports its route in another header than X-Route.
    let reply = common::Reply::ok(
        "text/event-stream",
        common::at_once([common::oa_content("A"), common::oa_done()]),
    )
    .header("x-served-by", "docs")
    .header("x-route", "decoy");
    let srv = common::script_server(reply).await;
    let mut s = spec(&srv.url());
    s.route_header = "X-Served-By".to_ascii_lowercase();
    let got = probe(s).await.remove(0);
    assert_ok(&got);
    assert_eq!(got.route.as_deref(), Some("docs"));
    // By default, X-Route.
    let got = probe(spec(&srv.url())).await.remove(0);
    assert_eq!(got.route.as_deref(), Some("decoy"));
}
