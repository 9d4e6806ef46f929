//! Linearity benchmark for the stream decoders: times decoding adversarial
//! bodies of n and 10·n bytes in one run and prints the time per byte and
//! the ratio t(10·n) / (10 · t(n)), which stays near 1 for a linear
//! decoder and nears 10 for a quadratic one. docs/FUZZING.md records a run.
//!
//! ```text
//! cargo run -p firsttoken-drive --example decode_linear [-- MIB]
//! ```
//!
//! The dev profile already builds this crate and serde_json at opt-level 2
//! (the root Cargo.toml), so no release build of the workspace is needed.
//! Bodies are fed in 16 KiB chunks, as they come off a socket, with an event
//! bound above the body size so nothing is refused early: every byte is
//! decoded. Each size is timed as the best of 5 runs.

use std::time::{Duration, Instant};

use firsttoken_drive::decode::Decoder;
use firsttoken_plan::StreamFormat;

const CHUNK: usize = 16 * 1024;

/// One adversarial body shape: a decoder set-up and a body of about `n` bytes.
struct Shape {
    name: &'static str,
    format: StreamFormat,
    content_type: Option<&'static str>,
    body: fn(usize) -> Vec<u8>,
}

fn repeat(unit: &[u8], n: usize) -> Vec<u8> {
    unit.iter().copied().cycle().take(n).collect()
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "one long SSE data line",
            format: StreamFormat::OpenAiChat,
            content_type: None,
            body: |n| [b"data: ".as_slice(), &repeat(b"a", n)].concat(),
        },
        Shape {
            name: "many tiny OpenAI events",
            format: StreamFormat::OpenAiChat,
            content_type: None,
            body: |n| {
                repeat(
                    b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
                    n,
                )
            },
        },
        Shape {
            name: "one event of many data lines",
            format: StreamFormat::SseJson("/t".into()),
            content_type: None,
            body: |n| repeat(b"data: x\n", n),
        },
        Shape {
            name: "comments (keep-alives)",
            format: StreamFormat::Auto,
            content_type: Some("text/event-stream"),
            body: |n| repeat(b": keep-alive\n", n),
        },
        Shape {
            name: "bare CRs (a line each)",
            format: StreamFormat::OpenAiChat,
            content_type: None,
            body: |n| repeat(b"\r", n),
        },
        Shape {
            name: "whitespace, unlabelled (sniffing)",
            format: StreamFormat::Auto,
            content_type: None,
            body: |n| repeat(b" \n\t\r", n),
        },
        Shape {
            name: "deep JSON in each event (depth 100)",
            format: StreamFormat::OpenAiChat,
            content_type: None,
            body: |n| {
                let deep = format!(
                    "data: {{\"choices\":[{{\"delta\":{{\"content\":\"a\"}}}}],\"x\":{}{}}}\n\n",
                    "[".repeat(100),
                    "]".repeat(100)
                );
                repeat(deep.as_bytes(), n)
            },
        },
        Shape {
            name: "tiny NDJSON lines",
            format: StreamFormat::Ollama,
            content_type: None,
            body: |n| repeat(b"{\"response\":\"a\",\"done\":false}\n", n),
        },
        Shape {
            name: "one long NDJSON line",
            format: StreamFormat::Ollama,
            content_type: None,
            body: |n| repeat(b"{", n),
        },
        Shape {
            name: "one Server-Timing event, many entries",
            format: StreamFormat::OpenAiChat,
            content_type: None,
            body: |n| {
                let mut b = b"event: server-timing\ndata: ".to_vec();
                b.extend(repeat(b"db;dur=12.5;desc=\"q\", ", n));
                b.extend_from_slice(b"\n\n");
                b
            },
        },
        Shape {
            name: "multi-byte UTF-8 text",
            format: StreamFormat::Text,
            content_type: None,
            body: |n| repeat("é😀".as_bytes(), n),
        },
    ]
}

/// Best of 3 times to decode `body`; also checks the decoder read it all
/// without an error (a refused body would time nothing).
fn time(shape: &Shape, body: &[u8]) -> Duration {
    (0..5)
        .map(|_| {
            let mut d =
                Decoder::with_max(&shape.format, shape.content_type, false, body.len() + 1024);
            let start = Instant::now();
            for c in body.chunks(CHUNK) {
                std::hint::black_box(d.feed(c));
            }
            let took = start.elapsed();
            assert!(
                d.facts().error.is_none(),
                "{}: {:?}",
                shape.name,
                d.facts().error
            );
            took
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("MIB is a whole number of MiB"))
        .unwrap_or(1);
    let n = mib << 20;
    println!(
        "n = {mib} MiB, 10·n = {} MiB, 16 KiB chunks, best of 5",
        10 * mib
    );
    println!(
        "{:<38} {:>10} {:>10} {:>7}",
        "shape", "ns/B (n)", "ns/B (10n)", "ratio"
    );
    let mut worst = 0f64;
    for s in shapes() {
        let small = time(&s, &(s.body)(n));
        let large = time(&s, &(s.body)(10 * n));
        let per_small = small.as_secs_f64() * 1e9 / n as f64;
        let per_large = large.as_secs_f64() * 1e9 / (10 * n) as f64;
        let ratio = per_large / per_small;
        worst = worst.max(ratio);
        println!(
            "{:<38} {:>10.3} {:>10.3} {:>7.2}",
            s.name, per_small, per_large, ratio
        );
    }
    println!("worst ratio t(10n)/(10·t(n)): {worst:.2} (1 = linear, 10 = quadratic)");
}
