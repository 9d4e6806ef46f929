//! `firsttoken run --watch` and `probe --watch` in a real terminal: tmux
//! runs a session against the emulator, the test reads the screen, pauses
//! and resumes it with `p` and stops it with `q`, then checks the store
//! (samples kept, session partial); a probe's view is stopped with `q` and
//! its summary follows. Without tmux the test says so and passes outside CI; in CI
//! (`CI` set) a missing tmux fails it.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text, write_config};

/// A tmux server of the test's own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server on a socket named after `name` and this process, running
    /// `command` in a detached 110 × 40 session `ft`.
    fn start(name: &str, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: format!("{name}-{}", std::process::id()),
        };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "ft",
            "-x",
            "110",
            "-y",
            "40",
            command,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("tmux runs")
    }

    /// The screen, each run of whitespace one space (lines wrap).
    fn screen(&self) -> String {
        let raw = text(&self.run(&["capture-pane", "-p", "-t", "ft"]).stdout);
        raw.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The screen once `pred` holds, or a failure naming `what` after 60 s.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what} within 60 s; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn key(&self, k: &str) {
        let out = self.run(&["send-keys", "-t", "ft", k]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `N` of the header's `N/M requests stored`.
fn stored(screen: &str) -> u64 {
    let at = screen
        .find("requests stored")
        .unwrap_or_else(|| panic!("no count on the screen:\n{screen}"));
    let head = &screen[..at];
    let word = head.split_whitespace().last().expect("a count");
    word.split('/').next().unwrap().parse().expect("a number")
}

/// `N` of the header's `N started, not yet stored`.
fn in_flight(screen: &str) -> u64 {
    let at = screen
        .find(" started, not yet stored")
        .unwrap_or_else(|| panic!("no in-flight count on the screen:\n{screen}"));
    let word = screen[..at].rsplit(' ').next().expect("a count");
    word.parse().expect("a number")
}

/// Wait for the file `echo $? > FILE` writes, whole; its code.
fn exit_code(tmux: &Tmux, file: &Path, what: &str) -> String {
    let start = Instant::now();
    loop {
        // `>` creates the file before echo writes it: whole once it has its line.
        let code = std::fs::read_to_string(file).unwrap_or_default();
        if code.ends_with('\n') {
            return code.trim().to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} did not end within 60 s of q:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn have_tmux() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is needed for the live-view test (CI installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the live view's terminal test did not run");
    }
    ok
}

#[test]
fn the_live_view_pauses_resumes_and_stops_cleanly() {
    if !have_tmux() {
        return;
    }
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    // Long enough to outlast the test: it is stopped with q.
    let cfg = write_config(dir.path(), &emu.base, 5000);
    let store = dir.path().join("s.db").display().to_string();
    let exit_file = dir.path().join("exit");
    // `sleep 60` keeps the pane, and the summary on it, after the run ends.
    let command = format!(
        "{} run -c {cfg} --store {store} --watch; echo $? > {}; sleep 60",
        env!("CARGO_BIN_EXE_firsttoken"),
        exit_file.display()
    );
    let tmux = Tmux::start("firsttoken-watch", &command);

    // The view: groups with their TTFT, the phases, the keys.
    let s = tmux.wait_for("warm requests on the live view", |s| {
        s.contains("warm · chat") && s.contains("p pause between steps")
    });
    assert!(s.contains("TTFT p50 [95% CI]"), "{s}");
    assert!(s.contains("counted requests"), "{s}");
    assert!(s.contains("started, not yet stored"), "{s}");

    // p: held between steps; once the step under way is stored, nothing
    // is in flight, and the count stops moving. Two screens 100 ms apart
    // with the same count and nothing in flight: no request slipped past
    // the pause (a warm request here is stored within ~40 ms).
    tmux.key("p");
    let paused = |s: &str| s.contains("PAUSED between steps") && in_flight(s) == 0;
    let mut seen = None;
    let (s, held) = loop {
        let s = tmux.wait_for("the paused state, nothing in flight", paused);
        let n = stored(&s);
        if seen == Some(n) {
            break (s, n);
        }
        seen = Some(n);
        std::thread::sleep(Duration::from_millis(100));
    };
    // A pause is the absence of progress: watched over 1.5 s (dozens of
    // warm requests' time), as a user would see it.
    std::thread::sleep(Duration::from_millis(1500));
    let later = tmux.screen();
    assert_eq!(
        stored(&later),
        held,
        "requests went on while paused:\n{later}"
    );
    assert!(s.contains("p resume"), "{s}");

    // p again: it goes on.
    tmux.key("p");
    tmux.wait_for("requests after resuming", |s| {
        !s.contains("PAUSED") && stored(s) > held
    });

    // q: the same clean stop as Ctrl-C.
    tmux.key("q");
    let code = exit_code(&tmux, &exit_file, "the session");
    assert_eq!(code, "1", "a stopped session is partial: exit 1");
    // The terminal is given back and the summary printed (tmux may show
    // it a moment after the command ended).
    tmux.wait_for("the summary", |s| s.to_lowercase().contains("partial"));

    let ids = session_ids(&store);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let export = firsttoken(
        &[
            "export",
            "--store",
            &store,
            "--session",
            &ids[0],
            "--format",
            "jsonl",
        ],
        &[],
    );
    assert_code(&export, 0);
    let lines: Vec<serde_json::Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["status"]["state"], "partial", "{}", lines[0]);
    let samples = lines.len() - 1;
    assert!(samples as u64 >= held, "{samples} stored, {held} seen");
    assert!(Path::new(&store).exists());
}

#[test]
fn the_probe_view_shows_requests_in_flight_and_q_ends_it_with_the_summary() {
    if !have_tmux() {
        return;
    }
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let exit_file = dir.path().join("exit");
    let body = dir.path().join("body.json");
    std::fs::write(
        &body,
        r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .unwrap();
    // `sleep 60` keeps the pane, and the summary on it, after the probe ends.
    let command = format!(
        "{} probe {} -d @{} -n 100000 -c 4 --watch; echo $? > {}; sleep 60",
        env!("CARGO_BIN_EXE_firsttoken"),
        emu.url(),
        body.display(),
        exit_file.display()
    );
    let tmux = Tmux::start("firsttoken-watch-probe", &command);
    let s = tmux.wait_for("probe requests on the live view", |s| {
        s.contains("probe") && s.contains("TTFT p50 [95% CI]") && stored(s) > 20
    });
    // The requests under way are counted; every request succeeded; no
    // pause in a probe (one step).
    let _ = in_flight(&s);
    assert!(!s.contains("by kind:"), "no request failed: {s}");
    assert!(!s.contains("p pause"), "{s}");
    tmux.key("q");
    assert_eq!(exit_code(&tmux, &exit_file, "the probe"), "1");
    tmux.wait_for("the summary", |s| s.contains("interrupted"));
}
