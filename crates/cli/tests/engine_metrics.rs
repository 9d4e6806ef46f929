//! `[engine] metrics_url` when the engine's metrics cannot be read (issue
//! 28): a closed port on loopback. The session still runs every request and
//! completes; `run` warns that the read failed, before and after, and the
//! report's "The engine's own metrics" says why it has no difference. (The
//! reads that work are tested against the real llama-server in
//! `llama_server.rs`.)

mod common;

use common::edge::free_port;
use common::{EmulatorProcess, assert_code, firsttoken, text, write_config};

#[test]
fn an_engine_that_does_not_answer_is_named_and_stops_nothing() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 3);
    let url = format!("http://127.0.0.1:{}/metrics", free_port());
    let text_cfg =
        std::fs::read_to_string(&cfg).unwrap() + &format!("\n[engine]\nmetrics_url = \"{url}\"\n");
    std::fs::write(&cfg, text_cfg).unwrap();
    let store = dir.path().join("s.db").display().to_string();

    let run = firsttoken(&["run", "-c", &cfg, "--store", &store], &[]);
    assert_code(&run, 0);
    let err = text(&run.stderr);
    for when in ["before the first request", "after the last request"] {
        assert!(
            err.contains(&format!(
                "warning: the engine's metrics ({url}) could not be read {when}"
            )),
            "{err}"
        );
    }

    let report = firsttoken(&["report", "--store", &store, "--format", "markdown"], &[]);
    assert_code(&report, 0);
    let t = text(&report.stdout);
    assert!(t.contains("The engine's own metrics"), "{t}");
    assert!(
        t.contains(&format!(
            "no difference from {url}: the scrape before the session failed:"
        )),
        "{t}"
    );
    let j = common::report_json(&store, &[]);
    let m = &j["analysis"]["engine_metrics"]["sessions"][0];
    assert!(m["missing"].as_str().is_some(), "{m}");
    assert_eq!(m["histograms"], serde_json::json!([]));
}
