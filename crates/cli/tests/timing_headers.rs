//! Timing headers end to end (issue 25): a session against the reference
//! app sending `X-Process-Time` stores it per sample as
//! `header:x-process-time` in ms (no new column), the export and an import
//! carry it, and the report lists it with the app's other totals;
//! `[app] timing_headers = {}` reads none.

mod common;

use common::{EmulatorProcess, REFAPP_ACCOUNTS, assert_code, firsttoken, session_ids, text};

fn config(app: &str, emu: &str, extra: &str) -> String {
    format!(
        r#"
[session]
emulated = true

[app]
base_url = "{app}"
{extra}

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

{REFAPP_ACCOUNTS}

[direct]
url = "{emu}/v1/chat/completions"
model = "emulated-model"

[prompts]
list = ["hello"]

[phases]
warm = 4
direct = 4
"#
    )
}

/// The export's sample rows of the only session in `store`.
fn samples(store: &str) -> (String, Vec<serde_json::Value>) {
    let id = session_ids(store).into_iter().next().expect("a session");
    let out = firsttoken(&["export", "--store", store, "--session", &id], &[]);
    assert_code(&out, 0);
    let all = text(&out.stdout);
    let rows = all
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1" && r["phase"] == "warm")
        .collect();
    (all, rows)
}

#[test]
fn a_process_time_header_is_stored_exported_imported_and_reported() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let app_db = dir.path().join("app.db").display().to_string();
    let app = EmulatorProcess::refapp(&emu, &app_db, &["--process-time-header"]);
    let env = [("FT_TEST_APP_DB", app_db.as_str())];
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, config(&app.base, &emu.base, "")).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store],
        &env,
    );
    assert_code(&out, 0);
    let (exported, rows) = samples(&store);
    assert!(rows.len() >= 4, "{rows:?}");
    for r in &rows {
        let s = &r["sample"];
        let t = s["server_timing"]["header:x-process-time"]
            .as_f64()
            .unwrap_or_else(|| panic!("stored per sample: {s}"));
        let head = s["headers_ms"].as_f64().expect("headers stamped");
        assert!(t > 0.0 && t <= head, "{t} ms within the head's {head} ms");
        // Server-Timing is kept beside it, total included.
        assert!(s["server_timing"]["total"].is_number(), "{s}");
    }
    // An import carries it unchanged.
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &exported).unwrap();
    let other = dir.path().join("other.db").display().to_string();
    let imported = firsttoken(&["import", "--store", &other, file.to_str().unwrap()], &[]);
    assert_code(&imported, 0);
    let (_, back) = samples(&other);
    let times = |rows: &[serde_json::Value]| -> Vec<f64> {
        rows.iter()
            .map(|r| {
                r["sample"]["server_timing"]["header:x-process-time"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(times(&back), times(&rows));
    // The report lists it with the totals, never as an app phase.
    let report = firsttoken(&["report", "--store", &store, "--format", "json"], &[]);
    assert_code(&report, 0);
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let st = &v["analysis"]["overhead"][0]["server_timing"];
    let names = |k: &str| -> Vec<String> {
        st[k]
            .as_array()
            .unwrap_or_else(|| panic!("{st}"))
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        names("model_parts").contains(&"header:x-process-time".to_string()),
        "{st}"
    );
    assert!(
        !names("parts").iter().any(|n| n.starts_with("header:")),
        "{st}"
    );
    // The app's Server-Timing names a total: it is the total.
    assert_eq!(st["total"]["source"], "server_timing", "{st}");

    // Configured to read none: none is stored.
    std::fs::write(&cfg, config(&app.base, &emu.base, "timing_headers = {}")).unwrap();
    let none = dir.path().join("none.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &none],
        &env,
    );
    assert_code(&out, 0);
    let (_, rows) = samples(&none);
    assert!(
        rows.iter().all(|r| r["sample"]["server_timing"]
            .get("header:x-process-time")
            .is_none()),
        "{rows:?}"
    );
}
