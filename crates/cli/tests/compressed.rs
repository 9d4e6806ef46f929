//! `firsttoken probe --compressed` (issue 9, part 4) against a loopback
//! server that gzips its stream when, and only when, the request accepts
//! gzip: with the flag the probe decodes it, gives a TTFT and records the
//! content encoding; without it the probe asks for identity.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;

use common::{assert_code, firsttoken, text};

const STREAM: &str = concat!(
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
    "data: [DONE]\n\n"
);

/// Serve `requests` requests, one per connection, then stop. Sends back the
/// `Accept-Encoding` each request carried.
fn gzip_server(requests: usize) -> (String, mpsc::Receiver<String>, thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/v1/chat/completions",
        l.local_addr().expect("addr")
    );
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        for _ in 0..requests {
            let Ok((mut tcp, _)) = l.accept() else { return };
            let mut buf = Vec::new();
            let mut tmp = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match tcp.read(&mut tmp) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
            let accept = head
                .lines()
                .find_map(|l| l.strip_prefix("accept-encoding:"))
                .unwrap_or("")
                .trim()
                .to_string();
            let gzip = accept.contains("gzip");
            let _ = tx.send(accept);
            let body = if gzip {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(STREAM.as_bytes()).expect("gzip");
                e.finish().expect("gzip")
            } else {
                STREAM.as_bytes().to_vec()
            };
            let enc = if gzip {
                "content-encoding: gzip\r\n"
            } else {
                ""
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{enc}content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = tcp.write_all(head.as_bytes());
            let _ = tcp.write_all(&body);
        }
    });
    (url, rx, h)
}

#[test]
fn compressed_probe_decodes_gzip_and_records_the_encoding() {
    let (url, accepts, server) = gzip_server(2);
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let out = firsttoken(
        &[
            "probe",
            &url,
            "-d",
            body,
            "-n",
            "1",
            "--fresh",
            "--compressed",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let line = text(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one NDJSON line");
    assert_eq!(v["content_encoding"], "gzip", "{line}");
    assert!(v["ttft_ms"].as_f64().is_some(), "{line}");
    assert!(v["error"].is_null(), "{line}");
    assert_eq!(
        accepts.recv().expect("request seen"),
        "gzip, deflate, br, zstd"
    );

    // Without the flag: identity asked, identity answered, nothing recorded.
    let out = firsttoken(
        &["probe", &url, "-d", body, "-n", "1", "--fresh", "--json"],
        &[],
    );
    assert_code(&out, 0);
    let line = text(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one NDJSON line");
    assert!(v["content_encoding"].is_null(), "{line}");
    assert_eq!(accepts.recv().expect("request seen"), "identity");
    server.join().expect("server thread");
}
