//! The report of a traced session (tests/common/traces.rs: one worker,
//! 4 × 50 ms of sequential database work per chat request, bursts at
//! c = 1, 3, 5, a server clock 2 s ahead) in every format: snapshots
//! reviewed in the diff, the JSON valid against its schema, the terminal
//! within 100 columns, and the facts the words must carry.

mod common;
#[path = "common/traces.rs"]
mod traces;

use firsttoken_report::{Format, ReportInput, render};

fn rendered(format: Format) -> String {
    let (sessions, rows, analysis) = traces::analysis();
    render(
        format,
        &ReportInput::new(&sessions, &analysis, &[]).with_rows(&rows),
    )
    .unwrap()
    .replace(env!("CARGO_PKG_VERSION"), "VERSION")
}

#[test]
fn terminal() {
    let out = rendered(Format::Terminal);
    for l in out.lines() {
        assert!(l.chars().count() <= 100, "over 100 columns: {l}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn markdown() {
    insta::assert_snapshot!(rendered(Format::Markdown));
}

#[test]
fn json_is_valid_against_the_schema() {
    let out = rendered(Format::Json);
    let v = common::valid_report(&out);
    let validator = common::report_validator();
    let t = &v["analysis"]["traces"];
    let offset = &t["sessions"][0]["offset"];
    let (lo, hi) = (
        offset["lower_ms"].as_f64().unwrap(),
        offset["upper_ms"].as_f64().unwrap(),
    );
    assert!(lo <= traces::THETA_MS && traces::THETA_MS <= hi, "{offset}");
    insta::assert_snapshot!(serde_json::to_string_pretty(t).unwrap());
    // The schema checks the traces part too.
    let mut broken = v.clone();
    broken["analysis"]["traces"]["walls"][0]["reason"] = "because".into();
    assert!(!validator.is_valid(&broken));
    let mut broken = v.clone();
    broken["analysis"]["traces"]["sessions"][0]
        .as_object_mut()
        .unwrap()
        .remove("offset");
    assert!(!validator.is_valid(&broken));
}

#[test]
fn the_words_carry_the_findings() {
    let out = rendered(Format::Markdown);
    // The offset, with its interval.
    // The true shift, +2000 ms, lies within the stated interval.
    let said = "the server's clock is ahead of firsttoken's by +";
    let at = out.find(said).unwrap_or_else(|| panic!("no offset: {out}"));
    let rest = &out[at..];
    let (lo, hi) = {
        let open = rest.find("([").unwrap() + 2;
        let close = open + rest[open..].find(']').unwrap();
        let mut it = rest[open..close].split(", ").map(|b| {
            b.trim_start_matches('+')
                .trim_end_matches(" ms")
                .parse::<f64>()
                .unwrap()
        });
        (it.next().unwrap(), it.next().unwrap())
    };
    assert!(lo <= 2000.0 && 2000.0 <= hi, "{rest}");
    // Untraced requests are counted.
    assert!(
        out.contains("chat (warm): 29 of 30 requests have server spans"),
        "{out}"
    );
    // The overhead split prefers spans, and database time dominates it.
    let (_, _, a) = traces::analysis();
    let t = a.traces.as_ref().unwrap();
    let chat = t
        .splits
        .iter()
        .find(|s| s.scope.path.as_deref() == Some("chat"))
        .unwrap();
    let db = chat.parts.iter().find(|p| p.group == "database").unwrap();
    assert!(db.share_of_overhead.unwrap() >= 0.9, "{db:?}");
    assert!(out.contains(
        "its server spans (median per request): database 200 ms (97.9 % of the app overhead)"
    ));
    assert!(out.contains("in 4 sequential calls"));
    // The wall: queue wait grows at c = 3 and 5, the handler does not.
    assert!(
        out.contains("chat: requests waited for the worker"),
        "{out}"
    );
    // Paths part by part.
    assert!(out.contains("chat vs docs"), "{out}");
}

#[test]
fn html() {
    let page = rendered(Format::Html);
    assert!(page.contains(r#"<section id="spans">"#));
    for i in 0..4 {
        assert!(
            page.contains(&format!(r#"data-plot="span-waterfall-{i}""#)),
            "waterfall {i}"
        );
    }
    let at = page.find(r#"<section id="spans">"#).unwrap();
    let end = at + page[at..].find("</section>").unwrap();
    insta::assert_snapshot!(&page[at..end]);
}

#[test]
fn without_spans_the_section_says_so_and_counts_every_request() {
    let sessions = vec![traces::meta()];
    let (rows, _) = traces::rows_and_spans();
    let frame = firsttoken_analyze::Frame::from_rows(&rows, &sessions).unwrap();
    let mut a = firsttoken_analyze::analyze(
        &frame,
        &sessions,
        &[],
        &firsttoken_analyze::settings_for(&sessions),
    );
    let ids = vec![sessions[0].id.clone()];
    let input = firsttoken_analyze::SpanInput {
        sessions: &ids,
        rows: &rows,
        spans: &[],
        groups: &Default::default(),
    };
    firsttoken_analyze::attach_traces(&mut a, &frame, &sessions, &input);
    let out = render(Format::Terminal, &ReportInput::new(&sessions, &a, &[])).unwrap();
    assert!(
        out.contains("No request has server spans (0 spans received"),
        "{out}"
    );
    assert!(
        out.contains("chat (warm): 0 of 30 requests have server spans; 30 without (30 had none")
    );
    // Nothing is explained by spans, so Server-Timing's absence still limits.
    assert!(out.contains("the app sent no Server-Timing"));
}
