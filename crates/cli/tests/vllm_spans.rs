//! Issue 28, vLLM: an engine that reports its own times in a span per
//! request (`llm_request`, with `gen_ai.latency.time_in_queue`,
//! `time_in_model_prefill`, `time_to_first_token`, … in seconds) is joined
//! to firsttoken's samples by trace id through the ordinary span import
//! (`firsttoken import-spans`, OTLP JSON as the Collector's file exporter
//! writes it), and the report splits each request's TTFT with the
//! engine's prefill and queue wait.
//!
//! The spans are filled from `tests/fixtures/vllm/llm_request_span.json`
//! (vLLM's attribute names and value types; see the README beside it) for
//! the trace ids a session against the emulator sent, with a queue wait
//! that grows with the request's place in its burst, as one busy engine
//! would show it.

mod common;

use common::{EmulatorProcess, assert_code, firsttoken, session_ids};
use firsttoken_record::Store;
use serde_json::Value;

const SPAN: &str = include_str!("fixtures/vllm/llm_request_span.json");

/// The fixture span for one request, as one line's span: the engine's own
/// TTFT `ttft_s`, of which a quarter in its queue and 70 % in prefill.
fn span(trace: &str, n: usize, start_ns: u64, ttft_s: f64) -> String {
    let (queue_s, prefill_s) = (0.25 * ttft_s, 0.7 * ttft_s);
    let ttft = ttft_s;
    let e2e = ttft + 0.08;
    let filled = SPAN
        .replace("TRACE_ID", trace)
        .replace("SPAN_ID", &format!("{:016x}", 0xa000 + n))
        .replace("PARENT_ID", &format!("{:016x}", 0xb000 + n))
        .replace("REQUEST_ID", &n.to_string())
        .replace("START_NS", &start_ns.to_string())
        .replace("END_NS", &(start_ns + (e2e * 1e9) as u64).to_string())
        .replace("QUEUE_S", &queue_s.to_string())
        .replace("TTFT_S", &ttft.to_string())
        .replace("E2E_S", &e2e.to_string())
        .replace("PREFILL_S", &prefill_s.to_string())
        .replace("DECODE_S", "0.08")
        .replace("INFERENCE_S", &(prefill_s + 0.08).to_string());
    // One line: the file holds JSON lines.
    serde_json::from_str::<Value>(&filled)
        .expect("the fixture fills to JSON")
        .to_string()
}

#[test]
fn vllms_request_spans_split_the_ttft_by_trace_id() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[session]
network = "loopback"
seed = 28

[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/v1/chat/completions"
body = '{{"model":"m","stream":true,"messages":[{{"role":"user","content":"{{prompt}}"}}]}}'

[prompts]
list = ["hello"]

[phases]
concurrency = {{ levels = [1, 3], requests = 12 }}
"#,
            base = emu.base
        ),
    )
    .unwrap();
    let store = dir.path().join("s.db").display().to_string();
    assert_code(
        &firsttoken(
            &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
            &[],
        ),
        0,
    );
    let session = session_ids(&store).remove(0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let rows = rt.block_on(async {
        let s = Store::open(&store).await.unwrap();
        s.samples(&session).await.unwrap()
    });
    // One span per measured request, its engine TTFT 2 ms inside
    // firsttoken's (the HTTP and network time vLLM cannot see).
    let mut spans = Vec::new();
    for (n, r) in rows.iter().filter(|r| !r.sample.warmup).enumerate() {
        let ttft = r.sample.ttft_ms.expect("a first token");
        let trace = r.sample.trace_id.as_deref().expect("traceparent sent");
        let start = r.started_at.unix_ms() as u64 * 1_000_000;
        spans.push(span(trace, n, start, (ttft - 2.0) / 1e3));
    }
    assert_eq!(spans.len(), 24);
    let line = format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"vllm"}}}}]}},"scopeSpans":[{{"scope":{{"name":"vllm.llm_engine"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    );
    let file = dir.path().join("vllm.jsonl");
    std::fs::write(&file, line).unwrap();
    let out = firsttoken(
        &[
            "import-spans",
            "--session",
            &session,
            "--store",
            &store,
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert_code(&out, 0);

    let report = firsttoken(&["report", "--store", &store, "--format", "json"], &[]);
    assert_code(&report, 0);
    let j: Value = serde_json::from_slice(&report.stdout).unwrap();
    // Valid against the published schema, the engine's figures included.
    common::assert_report_schema(&j);
    let engine = &j["analysis"]["engine"];
    let splits = engine["splits"].as_array().expect("engine splits");
    assert_eq!(splits.len(), 2, "c=1 and c=3: {engine}");
    let point = |s: &Value, k: &str| s[k]["point"].as_f64().unwrap_or(f64::NAN);
    for s in splits {
        assert_eq!(s["clock"], "vllm_span", "{s}");
        assert_eq!(s["timed_by_engine"], 12, "every request joined: {s}");
        // Each request's values, read back through the join: the outside
        // is exactly the 2 ms the fixture put there; prefill and queue
        // are 70 % and 25 % of the engine's TTFT (so of TTFT − 2 ms).
        assert!((point(s, "outside_engine") - 2.0).abs() < 1e-6, "{s}");
        let engine_ttft = point(s, "ttft") - 2.0;
        assert!(
            (point(s, "prefill") - 0.7 * engine_ttft).abs() < 1e-6,
            "{s}"
        );
        assert!(
            (point(s, "engine_queue") - 0.25 * engine_ttft).abs() < 1e-6,
            "{s}"
        );
        assert!(
            (point(s, "rest") - (0.3 * engine_ttft + 2.0)).abs() < 1e-6,
            "{s}"
        );
    }
    // The text names the engine's queue beside its prefill.
    let out = firsttoken(&["report", "--store", &store], &[]);
    assert_code(&out, 0);
    let t = common::text(&out.stdout);
    assert!(t.contains("the engine's own queue wait"), "{t}");
}
