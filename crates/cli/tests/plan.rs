//! `firsttoken plan` end to end: a real session against the emulator on
//! loopback as the pilot, then the table, the JSON and the errors.

mod common;

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text, write_config};

/// The output parsed and checked against docs/schema/plan.v1.schema.json.
fn plan_json(stdout: &[u8]) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("plan JSON");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/schema/plan.v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{v:#}");
    assert_eq!(v["schema"], "firsttoken.plan.v1");
    v
}

#[test]
fn plan_reads_a_stored_pilot_and_prints_a_table_and_json() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 30);
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &[
            "run",
            "-c",
            &cfg,
            "--store",
            &store,
            "--code-version",
            "v1",
            "-q",
        ],
        &[],
    );
    assert_code(&out, 0);
    let id = session_ids(&store).remove(0);
    // A second store with a session of its own and this one imported:
    // two provenance kinds, which a plan never pools or compares.
    let mixed = dir.path().join("m.db").display().to_string();
    assert_code(
        &firsttoken(&["run", "-c", &cfg, "--store", &mixed, "-q"], &[]),
        0,
    );
    let export = dir.path().join("e.jsonl").display().to_string();
    assert_code(
        &firsttoken(
            &["export", "--store", &store, "--session", &id, "-o", &export],
            &[],
        ),
        0,
    );
    assert_code(&firsttoken(&["import", "--store", &mixed, &export], &[]), 0);
    drop(emu);
    let out = firsttoken(&["plan", "--store", &mixed, "--detect", "5ms"], &[]);
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("several provenance kinds (emulated, imported)"),
        "{}",
        text(&out.stderr)
    );
    let ids = session_ids(&mixed);
    assert_eq!(ids.len(), 2);
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &mixed,
            "--detect",
            "5ms",
            "--between",
            &ids[0],
            &ids[1],
        ],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("provenance kinds are never compared"),
        "{}",
        text(&out.stderr)
    );

    // One pilot group, planned against another like it: the table.
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &store,
            "--detect",
            "20%",
            "--simulations",
            "100",
        ],
        &[],
    );
    assert_code(&out, 0);
    let t = text(&out.stdout);
    assert!(
        t.starts_with(&format!(
            "Sample-size plan: ttft, warm phase, 80 % power at 95 % confidence, from session {id}\n"
        )),
        "{t}"
    );
    assert!(
        t.contains("| metric | groups | n now | power now | detectable now | n needed | to go |"),
        "{t}"
    );
    let row = t
        .lines()
        .find(|l| l.starts_with("| ttft median | pilot vs another like it | 30 per group |"))
        .unwrap_or_else(|| panic!("no pilot row:\n{t}"));
    assert!(row.contains("per group |"), "{row}");
    assert!(
        t.contains("400 simulated") || t.contains("100 simulated"),
        "{t}"
    );
    assert!(!t.contains("faster") && !t.contains("slower"), "{t}");

    // The same as JSON, with the numbers behind the text.
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &store,
            "--detect",
            "20%",
            "--simulations",
            "100",
            "--format",
            "json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let j = plan_json(&out.stdout);
    assert_eq!(j["metric"], "ttft");
    assert_eq!(j["unit"], "ms");
    assert_eq!(j["sessions"][0], id.as_str());
    assert_eq!(j["simulations"], 100);
    let p = &j["power"][0];
    assert_eq!(p["plan"]["n_a"], 30);
    assert_eq!(p["plan"]["rule"], "median_comparison");
    assert_eq!(
        p["plan"]["effect"],
        serde_json::json!({"kind": "relative", "value": 0.2})
    );
    let median = p["plan"]["baseline_quantile"].as_f64().unwrap();
    assert!((p["plan"]["difference"].as_f64().unwrap() - 0.2 * median).abs() < 1e-9);
    let needed = &p["plan"]["needed"];
    assert_eq!(needed["status"], "reached", "{p}");
    let n = needed["n"].as_u64().unwrap();
    assert!(needed["power"].as_f64().unwrap() >= 0.8);
    assert_eq!(p["text"]["n_needed"], format!("{n} per group"));
    // The text of the table row is the JSON's text.
    assert!(row.contains(&format!("| {n} per group |")), "{row}");
    // Whatever the pilot holds, power now and n needed agree.
    assert_eq!(
        n <= 30,
        p["plan"]["power_now"].as_f64().unwrap() >= 0.8,
        "{p}"
    );

    // Two sessions (here the same one twice) and the width table.
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &store,
            "--detect",
            "5ms",
            "--between",
            &id,
            &id,
            "--width",
            "10%",
            "--simulations",
            "100",
        ],
        &[],
    );
    assert_code(&out, 0);
    let t = text(&out.stdout);
    assert!(
        t.contains(&format!("| {id} vs {id} | 30 per group |")),
        "{t}"
    );
    for p in ["p50", "p90", "p95", "p99"] {
        assert!(t.contains(&format!("| {id} | {p} | 30 |")), "{p}:\n{t}");
    }
    assert!(t.contains("pilot has not seen this tail"), "{t}");

    // By a key: one row per value.
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &store,
            "--detect",
            "5ms",
            "--by",
            "code_version",
            "--simulations",
            "100",
        ],
        &[],
    );
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("| code_version=v1 vs another like it | 30 per group |"),
        "{}",
        text(&out.stdout)
    );

    // Clear errors: a pilot too small, an unknown value, a bad difference.
    let out = firsttoken(
        &[
            "plan", "--store", &store, "--detect", "5ms", "--phase", "fresh",
        ],
        &[],
    );
    assert_code(&out, 2);
    let e = text(&out.stderr);
    assert!(
        e.contains("pilot: 2 values of the metric, at least 10 are needed for a pilot"),
        "{e}"
    );
    let out = firsttoken(
        &[
            "plan",
            "--store",
            &store,
            "--detect",
            "5ms",
            "--by",
            "code_version",
            "--between",
            "v2",
            "v1",
        ],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("no rows with code_version=v2 in the warm phase"),
        "{}",
        text(&out.stderr)
    );
    let out = firsttoken(&["plan", "--store", &store, "--detect", "soon"], &[]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("expected a difference such as 100ms"));
    let out = firsttoken(&["plan", "--store", &store], &[]);
    assert_code(&out, 2);
}

#[test]
fn plan_runs_its_own_pilot_first() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 30);
    let store = dir.path().join("p.db").display().to_string();
    let out = firsttoken(
        &[
            "plan",
            "--pilot",
            "12",
            "-c",
            &cfg,
            "--store",
            &store,
            "--detect",
            "20%",
            "--width",
            "50%",
            "--simulations",
            "100",
            "--format",
            "json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let e = text(&out.stderr);
    assert!(
        e.contains(&format!(
            "pilot: 12 warm requests (12 per app path) against {}",
            emu.base
        )),
        "{e}"
    );
    let ids = session_ids(&store);
    assert_eq!(ids.len(), 1, "one pilot session stored");
    assert!(
        e.contains(&format!(
            "pilot: session {} stored, 0 of 12 requests failed",
            ids[0]
        )),
        "{e}"
    );
    let j = plan_json(&out.stdout);
    assert_eq!(j["sessions"], serde_json::json!([ids[0]]));
    assert_eq!(j["power"][0]["plan"]["n_a"], 12);
    assert_eq!(j["power"][0]["groups"], "pilot vs another like it");
    assert_eq!(j["width"].as_array().unwrap().len(), 4);
    assert_eq!(j["width"][3]["plan"]["shown_from"], 100);
    // Only warm requests were sent: no other phase has rows.
    let out = firsttoken(
        &[
            "plan", "--store", &store, "--detect", "5ms", "--phase", "fresh",
        ],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("no rows in the fresh phase"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn plan_says_what_a_config_s_counts_support_before_running_it() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 12);
    let store = dir.path().join("c.db").display().to_string();
    // Without a store: counts alone; nothing is sent.
    let out = firsttoken(&["plan", "--claims", "-c", &cfg, "--store", &store], &[]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    assert!(
        t.contains("| warm | chat | 12 | p50, p90; p95 needs 20; p99 needs 100 | possible | no pilot rows | – |"),
        "{t}"
    );
    assert!(
        t.contains("| fresh | chat | 2 | p50; p90 needs 10; p95 needs 20; p99 needs 100 | too few samples for a rank test (n = 2 and 2) | no pilot rows | – |"),
        "{t}"
    );
    assert!(t.contains("| concurrency | chat @ 2 concurrent |"), "{t}");
    assert!(
        !std::path::Path::new(&store).exists(),
        "--claims creates no store"
    );
    // With a pilot in the store: the difference each count detects, and time.
    let out = firsttoken(
        &[
            "plan",
            "--pilot",
            "12",
            "-c",
            &cfg,
            "--store",
            &store,
            "--width",
            "50%",
            "--simulations",
            "50",
        ],
        &[],
    );
    assert_code(&out, 0);
    drop(emu);
    let out = firsttoken(
        &[
            "plan",
            "--claims",
            "-c",
            &cfg,
            "--store",
            &store,
            "--simulations",
            "50",
            "--format",
            "json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let j = plan_json(&out.stdout);
    let rows = j["claims"]["rows"].as_array().unwrap();
    let warm = rows.iter().find(|r| r["phase"] == "warm").unwrap();
    assert_eq!(warm["support"]["n"], 12);
    assert_eq!(warm["pilot_values"], 12);
    assert_eq!(warm["detectable"]["status"], "found", "{warm}");
    assert!(warm["time_ms"].as_f64().unwrap() > 0.0);
    let fresh = rows.iter().find(|r| r["phase"] == "fresh").unwrap();
    assert_eq!(fresh["text"]["detectable"], "no pilot rows");
}
