//! The HTML report in a real browser: headless Chromium opens the page from
//! a file with networking cut down, and the DOM it dumps must show every
//! plot drawn as SVG, the page's load marker set, and no script or console
//! error (a blocked network load would be a Content-Security-Policy console
//! error).
//!
//! Needs Debian's `chromium` package (`/usr/bin/chromium`, or the path in
//! `$CHROMIUM`); CI installs it. Set `$HTML_SCREENSHOT` to a path to keep
//! the screenshot the test takes.

#[path = "../src/html/testdata.rs"]
mod testdata;

#[path = "common/traces.rs"]
mod traces;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

const PLOTS: [&str; 5] = [
    "ttft-cdf",
    "session-box",
    "concurrency",
    "waterfall",
    "providers",
];

fn chromium_path() -> PathBuf {
    let path =
        std::env::var_os("CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from);
    assert!(
        path.exists(),
        "headless Chromium is needed at {}: install Debian's `chromium` package \
         (apt-get install -y chromium; CI installs it), or point $CHROMIUM at a Chromium binary",
        path.display()
    );
    path
}

/// What one Chromium run printed.
struct Run {
    stdout: String,
    stderr: String,
}

/// Run Chromium on `page` with `extra` arguments, killing it after [`TIMEOUT`].
fn chromium(dir: &Path, page: &Path, name: &str, extra: &[String]) -> Run {
    let out = dir.join(format!("{name}.stdout"));
    let err = dir.join(format!("{name}.stderr"));
    let mut child = Command::new(chromium_path())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join(format!("{name}-profile")).display()
        ))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).expect("stdout file"))
        .stderr(fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    // Headless Chromium sometimes hangs after writing what it was asked
    // for (cypress-io/cypress#27264): wait for the output to be whole
    // (a screenshot ending in PNG's IEND chunk, a DOM dump ending in
    // `</html>`), or for the exit.
    const IEND: [u8; 8] = [0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];
    let whole = || match extra.iter().find_map(|a| a.strip_prefix("--screenshot=")) {
        Some(shot) => fs::read(shot).is_ok_and(|png| png.ends_with(&IEND)),
        None => fs::read_to_string(&out).is_ok_and(|d| d.trim_end().ends_with("</html>")),
    };
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break Some(status);
        }
        if whole() {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {TIMEOUT:?}; stderr:\n{}",
                fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let run = Run {
        stdout: fs::read_to_string(&out).expect("read stdout"),
        stderr: fs::read_to_string(&err).expect("read stderr"),
    };
    if let Some(status) = status {
        assert!(
            status.success(),
            "chromium exited with {status}; stderr:\n{}",
            run.stderr
        );
    }
    run
}

/// Page errors Chromium logged: uncaught exceptions and console messages.
fn page_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("Uncaught") || l.contains("CONSOLE"))
        .collect()
}

/// The dumped DOM of a run, once it is shown to have loaded with no script
/// or page error.
fn loaded_clean(run: &Run) -> String {
    let dom = &run.stdout;
    assert!(
        dom.contains("</html>"),
        "no DOM dumped; stderr:\n{}",
        run.stderr
    );
    let body = &dom[dom.find("<body").expect("a body")..];
    let body_tag = &body[..body.find('>').unwrap()];
    assert!(
        body_tag.contains(r#"data-js-ok="1""#),
        "the load marker is missing: {body_tag}"
    );
    assert!(
        !dom.contains("data-js-errors="),
        "script errors: {body_tag}"
    );
    let errors = page_errors(&run.stderr);
    assert!(errors.is_empty(), "page errors:\n{}", errors.join("\n"));
    dom.clone()
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let (analysis, sessions, rows) = testdata::fixture();
    let input = firsttoken_report::ReportInput::new(&sessions, &analysis, &[]).with_rows(&rows);
    let html = firsttoken_report::html::render(&input).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    fs::write(&page, &html).unwrap();

    let run = chromium(dir.path(), &page, "dom", &["--dump-dom".to_string()]);
    let dom = &loaded_clean(&run);
    assert!(
        !dom.contains(testdata::EVIL),
        "the label with markup was not escaped"
    );

    for id in PLOTS {
        let at = dom
            .find(&format!(r#"data-plot="{id}""#))
            .unwrap_or_else(|| panic!("plot {id} is missing"));
        let figure = &dom[at..at + dom[at..].find("</figure>").expect("figure end")];
        let svg_at = figure
            .find("<svg")
            .unwrap_or_else(|| panic!("plot {id} has no <svg>"));
        let svg = &figure[svg_at..figure.find("</svg>").expect("svg end")];
        let children = ["<line", "<polyline", "<rect", "<circle", "<path", "<text"]
            .iter()
            .map(|t| svg.matches(t).count())
            .sum::<usize>();
        assert!(children > 20, "plot {id} has only {children} elements");
    }

    let shot = dir.path().join("report.png");
    let run = chromium(
        dir.path(),
        &page,
        "shot",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".to_string(),
            "--hide-scrollbars".to_string(),
        ],
    );
    let png =
        fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}); stderr:\n{}", run.stderr));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    if let Some(keep) = std::env::var_os("HTML_SCREENSHOT") {
        fs::write(&keep, &png).unwrap();
        fs::write(Path::new(&keep).with_extension("html"), &html).unwrap();
    }
}

#[test]
fn the_span_waterfalls_render_in_headless_chromium() {
    let (sessions, rows, analysis) = traces::analysis();
    let input = firsttoken_report::ReportInput::new(&sessions, &analysis, &[]).with_rows(&rows);
    let html = firsttoken_report::html::render(&input).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("spans.html");
    fs::write(&page, &html).unwrap();

    let run = chromium(dir.path(), &page, "spans", &["--dump-dom".to_string()]);
    let dom = &loaded_clean(&run);
    // A typical and a slow request per path: chat and docs.
    for i in 0..4 {
        let id = format!("span-waterfall-{i}");
        let at = dom
            .find(&format!(r#"data-plot="{id}""#))
            .unwrap_or_else(|| panic!("waterfall {id} is missing"));
        let figure = &dom[at..at + dom[at..].find("</figure>").expect("figure end")];
        let svg = &figure[figure
            .find("<svg")
            .unwrap_or_else(|| panic!("{id} has no <svg>"))..];
        // Client phases and at least the root, handler, auth, database
        // and provider spans, each a bar.
        let bars = svg.matches("<rect").count();
        assert!(bars >= 10, "{id} has only {bars} bars");
        assert!(
            svg.contains("server: database"),
            "{id} has no database legend"
        );
    }
    if let Some(keep) = std::env::var_os("HTML_SCREENSHOT") {
        let shot = dir.path().join("spans.png");
        chromium(
            dir.path(),
            &page,
            "spans-shot",
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1280,6000".to_string(),
                "--hide-scrollbars".to_string(),
            ],
        );
        fs::write(
            Path::new(&keep).with_extension("spans.png"),
            fs::read(&shot).unwrap(),
        )
        .unwrap();
        fs::write(Path::new(&keep).with_extension("spans.html"), &html).unwrap();
    }
}
