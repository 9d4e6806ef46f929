//! The `firsttoken` binary end to end: `firsttoken emulate` runs as a child
//! process on a loopback port and `firsttoken probe` measures it. Output
//! lines are checked against the checked-in JSON Schema, exit codes against
//! the documented ones (0 ok, 1 failed requests, 2 usage), and secrets from
//! header values must never reach stdout or stderr.

mod common;

use std::process::Output;

use common::{EmulatorProcess, assert_code, firsttoken, text};
use serde_json::Value;

const SCHEMA: &str = include_str!("../../../docs/schema/sample.v1.schema.json");
const SECRET: &str = "sk-secret-123";
/// stdout as JSON lines, each validated against the sample schema.
#[track_caller]
fn json_lines(out: &Output) -> Vec<Value> {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    text(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(validator.is_valid(&v), "{errors:?}\n{l}");
            v
        })
        .collect()
}

/// A loopback URL where nothing listens.
fn refused_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    drop(l);
    format!("http://{addr}/v1/chat/completions")
}

#[test]
fn probe_json_lines_follow_the_schema() {
    let emu = EmulatorProcess::start();
    let out = firsttoken(
        &[
            "probe",
            &emu.url(),
            "--body",
            r#"{"stream":true}"#,
            "-n",
            "3",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4, "1 warm-up + 3: {lines:#?}");
    assert_eq!(lines[0]["warmup"], true);
    assert_eq!(lines[0]["connection"], "fresh");
    for l in &lines[1..] {
        assert_eq!(l["warmup"], false, "{l}");
        assert_eq!(l["connection"], "reused", "{l}");
        assert!(l["connect_ms"].is_null(), "{l}");
    }
    for l in &lines {
        assert!(l["error"].is_null(), "{l}");
        assert_eq!(l["output_tokens"], 4, "{l}");
        assert_eq!(l["content_chunks"], 4, "{l}");
        let ttft = l["ttft_ms"].as_f64().expect("ttft_ms");
        assert!(
            ttft >= 29.0,
            "the emulator waits 30 ms before the first token: {l}"
        );
    }
    // The summary goes to stderr, so stdout stays pure NDJSON.
    assert!(text(&out.stderr).contains("ttft"), "{}", text(&out.stderr));
}

#[test]
fn probe_fresh_json_opens_a_connection_each_time() {
    let emu = EmulatorProcess::start();
    let out = firsttoken(
        &[
            "probe",
            &emu.url(),
            "--body",
            r#"{"stream":true}"#,
            "--fresh",
            "-n",
            "2",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "no warm-up with --fresh: {lines:#?}");
    for l in &lines {
        assert_eq!(l["connection"], "fresh", "{l}");
        assert_eq!(l["warmup"], false, "{l}");
        assert!(l["connect_ms"].as_f64().is_some(), "{l}");
    }
}

#[test]
fn text_mode_prints_a_line_per_request_and_a_summary() {
    let emu = EmulatorProcess::start();
    let out = firsttoken(
        &[
            "probe",
            &emu.url(),
            "--body",
            r#"{"stream":true}"#,
            "-n",
            "2",
        ],
        &[],
    );
    assert_code(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("warm-up"), "{stdout}");
    assert!(stdout.contains("#0") && stdout.contains("#1"), "{stdout}");
    assert!(stdout.contains("ttft="), "{stdout}");
}

#[test]
fn a_failing_target_exits_1() {
    let url = refused_url();
    let out = firsttoken(&["probe", &url, "-n", "2", "--fresh", "--json"], &[]);
    assert_code(&out, 1);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["error"]["kind"], "connect", "{l}");
    }
    // Text mode too.
    let out = firsttoken(&["probe", &url, "-n", "1"], &[]);
    assert_code(&out, 1);
    assert!(
        text(&out.stdout).contains("ERROR connect"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn bad_usage_exits_2_with_a_clear_message() {
    let url = refused_url();
    let cases: [(&[&str], &str); 6] = [
        (&["probe", &url, "-n", "0"], "-n"),
        (&["probe", &url, "-c", "0"], "-c"),
        (&["probe", &url, "--format", "xml"], "xml"),
        (&["probe", "not a url"], "invalid URL"),
        (&["probe", "ftp://example.com/"], "ftp"),
        (&["probe", &url, "--http", "2"], "--http2-prior-knowledge"),
    ];
    for (args, needle) in cases {
        let out = firsttoken(args, &[]);
        assert_code(&out, 2);
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(needle),
            "{args:?}: stderr lacks {needle:?}:\n{stderr}"
        );
        assert!(
            stderr.to_lowercase().contains("error"),
            "{args:?}: {stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: nothing measured, nothing printed"
        );
    }
    // Argument-parser errors use the same code.
    for args in [
        &["probe", &url, "-n", "many"][..],
        &["probe"][..],
        &["probe", &url, "--bogus"][..],
    ] {
        let out = firsttoken(args, &[]);
        assert_code(&out, 2);
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn probe_help_mentions_fresh_and_json() {
    let out = firsttoken(&["probe", "--help"], &[]);
    assert_code(&out, 0);
    let help = text(&out.stdout);
    assert!(help.contains("--fresh"), "{help}");
    assert!(help.contains("--json"), "{help}");
}

#[test]
fn secrets_from_header_values_never_reach_the_output() {
    let emu = EmulatorProcess::start();
    let env = [("FT_TEST_KEY", SECRET)];
    let url = emu.url();
    let body = r#"{"stream":true}"#;
    let auth = "Authorization: Bearer $FT_TEST_KEY";
    let runs: [(&[&str], i32); 5] = [
        (
            &[
                "probe", &url, "-H", auth, "--body", body, "-n", "2", "--json",
            ],
            0,
        ),
        (&["probe", &url, "-H", auth, "--body", body, "-n", "2"], 0),
        (
            &[
                "probe",
                &url,
                "-H",
                "x-api-key: ${FT_TEST_KEY}",
                "--body",
                body,
                "-n",
                "1",
                "--fresh",
            ],
            0,
        ),
        // A failing request prints its error; the header must not come with it.
        (&["probe", &refused_url(), "-H", auth, "-n", "1"], 1),
        (
            &["probe", &refused_url(), "-H", auth, "-n", "1", "--json"],
            1,
        ),
    ];
    for (args, code) in runs {
        let out = firsttoken(args, &env);
        assert_code(&out, code);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(!all.contains(SECRET), "{args:?} leaked the secret:\n{all}");
    }
    // A header that cannot be sent is reported without its value.
    let env = [("FT_TEST_KEY", "sk-secret-123\nInjected: yes")];
    let out = firsttoken(&["probe", &url, "-H", auth, "-n", "1"], &env);
    assert_code(&out, 2);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("Authorization"),
        "the error names the header: {all}"
    );
    assert!(!all.contains(SECRET), "leaked the secret:\n{all}");
}
