//! Compression like a browser (issue 9, part 4), against a hand-written
//! loopback server that encodes its stream in the test: each event is
//! compressed and flushed as its own chunk, as a streaming compressor does.
//! With `compressed`, every coding a browser accepts decodes chunk by chunk
//! (each token stamped when its compressed bytes arrived); without it, an
//! encoding the client did not ask for fails as `decode`, named.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use firsttoken_plan::ProbeSpec;

/// The events of an OpenAI stream with three content tokens.
fn events() -> Vec<Vec<u8>> {
    vec![
        oa_role(),
        oa_content("A"),
        oa_content("B"),
        oa_content("C"),
        oa_usage(3, 3),
        oa_done(),
    ]
}

/// A streaming encoder whose output so far can be taken.
trait Streaming: Write {
    fn take(&mut self) -> Vec<u8>;
    fn end(self: Box<Self>) -> Vec<u8>;
}

impl Streaming for flate2::write::GzEncoder<Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn end(self: Box<Self>) -> Vec<u8> {
        self.finish().expect("gzip ends")
    }
}

impl Streaming for flate2::write::ZlibEncoder<Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn end(self: Box<Self>) -> Vec<u8> {
        self.finish().expect("zlib ends")
    }
}

impl Streaming for brotli::CompressorWriter<Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn end(self: Box<Self>) -> Vec<u8> {
        self.into_inner()
    }
}

impl Streaming for zstd::stream::Encoder<'static, Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn end(self: Box<Self>) -> Vec<u8> {
        self.finish().expect("zstd ends")
    }
}

fn encoder(coding: &str) -> Box<dyn Streaming> {
    let level = flate2::Compression::default();
    match coding {
        "gzip" => Box::new(flate2::write::GzEncoder::new(Vec::new(), level)),
        "deflate" => Box::new(flate2::write::ZlibEncoder::new(Vec::new(), level)),
        "br" => Box::new(brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22)),
        "zstd" => Box::new(zstd::stream::Encoder::new(Vec::new(), 3).expect("zstd encoder")),
        other => panic!("no encoder for {other}"),
    }
}

/// `parts` compressed as one stream, one flushed chunk per part, each sent
/// `gap` after the previous; the stream's end goes with the last part.
fn compressed(coding: &str, parts: &[Vec<u8>], gap: Duration) -> Vec<Chunk> {
    let mut e = encoder(coding);
    let mut chunks = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        e.write_all(p).expect("compress");
        let mut bytes = if i + 1 == parts.len() {
            e.take()
        } else {
            e.flush().expect("flush");
            e.take()
        };
        if i + 1 == parts.len() {
            let rest = std::mem::replace(&mut e, encoder(coding)).end();
            bytes.extend(rest);
        }
        chunks.push((if i == 0 { Duration::ZERO } else { gap }, bytes));
    }
    chunks
}

fn compressed_spec(url: &str) -> ProbeSpec {
    let mut s = spec(url);
    s.compressed = true;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_browser_coding_decodes_chunk_by_chunk() {
    let gap = Duration::from_millis(40);
    for coding in ["gzip", "deflate", "br", "zstd"] {
        let reply = Reply::ok("text/event-stream", compressed(coding, &events(), gap))
            .header("content-encoding", coding);
        let srv = script_server(reply).await;
        let mut samples = probe(compressed_spec(&srv.url())).await;
        let s = samples.remove(0);
        assert_ok(&s);
        assert_eq!(s.content_encoding.as_deref(), Some(coding), "{s:#?}");
        assert_eq!(s.content_chunks, 3, "{coding}: one chunk per token: {s:#?}");
        assert_eq!(s.output_tokens, Some(3), "{coding}: {s:#?}");
        let (ttfb, ttft, last) = (
            s.ttfb_ms.unwrap(),
            s.ttft_ms.unwrap(),
            s.last_token_ms.unwrap(),
        );
        // Tokens 2 and 3 come 40 ms apart on the wire: decoded as they
        // arrive, the first is stamped well before the last.
        assert!(
            last - ttft >= 60.0,
            "{coding}: the first token was stamped when it arrived, not at the end: {s:#?}"
        );
        assert!(ttfb <= ttft, "{coding}: {s:#?}");
        assert_phase_order(&s);
    }
}

/// A compressor that sends the headers at once but holds the body until it
/// has enough to compress: ttfb (first byte on the wire) stays early, ttft
/// (first decoded content token) is late, and the gap shows the buffering.
#[tokio::test]
async fn a_buffering_compressor_shows_as_a_gap_between_ttfb_and_ttft() {
    let whole: Vec<u8> = compressed("gzip", &events(), Duration::ZERO)
        .into_iter()
        .flat_map(|(_, b)| b)
        .collect();
    let reply = Reply::ok(
        "text/event-stream",
        vec![(Duration::from_millis(300), whole)],
    )
    .header("content-encoding", "gzip");
    let srv = script_server(reply).await;
    let s = probe(compressed_spec(&srv.url())).await.remove(0);
    assert_ok(&s);
    let (ttfb, ttft) = (s.ttfb_ms.unwrap(), s.ttft_ms.unwrap());
    assert!(ttfb < 150.0, "{s:#?}");
    assert!(ttft - ttfb >= 250.0, "{s:#?}");
    assert_eq!(s.content_chunks, 1, "every token in one chunk: {s:#?}");
    assert_phase_order(&s);
}

/// Regression: a server that gzips a stream the client asked to get as
/// `identity` was reported as `truncated`.
#[tokio::test]
async fn an_unasked_encoding_is_a_named_decode_failure() {
    let reply = Reply::ok(
        "text/event-stream",
        compressed("gzip", &events(), Duration::ZERO),
    )
    .header("content-encoding", "gzip");
    let srv = script_server(reply).await;
    let s = probe_one(&srv.url(), "auto").await;
    let m = assert_failed(&s, "decode");
    assert!(
        m.contains("server sent Content-Encoding: gzip unasked"),
        "{m}"
    );
    assert_eq!(s.content_encoding.as_deref(), Some("gzip"), "{s:#?}");
    assert!(s.ttft_ms.is_none(), "{s:#?}");
}

/// An identity response to a compressed request is fine and records no encoding.
#[tokio::test]
async fn an_identity_answer_to_a_compressed_request_is_plain() {
    let srv = script_server(Reply::ok("text/event-stream", at_once(events()))).await;
    let mut samples = probe(compressed_spec(&srv.url())).await;
    let s = samples.remove(0);
    assert_ok(&s);
    assert_eq!(s.content_encoding, None, "{s:#?}");
    assert_eq!(s.content_chunks, 3);
}

/// A gzip stream cut before its end marker, and bytes that are not zstd.
#[tokio::test]
async fn broken_compressed_streams_fail_with_what_broke() {
    let mut whole: Vec<u8> = compressed("gzip", &events(), Duration::ZERO)
        .into_iter()
        .flat_map(|(_, b)| b)
        .collect();
    whole.truncate(whole.len() - 8);
    let srv = script_server(
        Reply::ok("text/event-stream", at_once([whole])).header("content-encoding", "gzip"),
    )
    .await;
    let s = probe(compressed_spec(&srv.url())).await.remove(0);
    let m = assert_failed(&s, "truncated");
    assert!(m.contains("gzip"), "{m}");
    let srv = script_server(
        Reply::ok("text/event-stream", at_once([b"plain text".to_vec()]))
            .header("content-encoding", "zstd"),
    )
    .await;
    let s = probe(compressed_spec(&srv.url())).await.remove(0);
    let m = assert_failed(&s, "decode");
    assert!(m.contains("invalid zstd data"), "{m}");
}

/// An error status with a gzip body shows the decoded body.
#[tokio::test]
async fn a_compressed_error_body_is_shown_decoded() {
    let body = br#"{"error":{"message":"model is overloaded"}}"#.to_vec();
    let reply = Reply::ok(
        "application/json",
        compressed("gzip", &[body], Duration::ZERO),
    )
    .status(500)
    .header("content-encoding", "gzip");
    let srv = script_server(reply).await;
    let s = probe(compressed_spec(&srv.url())).await.remove(0);
    let m = assert_failed(&s, "http_status");
    assert!(m.contains("model is overloaded"), "{m}");
}
