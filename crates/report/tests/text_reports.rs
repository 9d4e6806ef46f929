//! Terminal, Markdown and JSON reports over a synthetic article-shaped
//! before/after pair: same sections in each, tables within 100 columns, JSON
//! valid against its checked-in schema.

mod common;

use firsttoken_report::{Format, ReportInput, doc, render};

#[test]
fn every_format_shows_the_same_sections() {
    let (sessions, _, analysis, cmp) = common::before_after_compared();
    assert!(cmp.better(), "{cmp:?}");
    let comparisons = [cmp];
    let input = ReportInput::new(&sessions, &analysis, &comparisons);
    let d = doc::build(&input);

    let text = render(Format::Terminal, &input).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l}");
    }
    let md = render(Format::Markdown, &input).unwrap();
    // The sections the text formats show: all but the page's plot-only one.
    let shown: Vec<_> = d.sections.iter().filter(|s| s.in_text()).collect();
    assert_eq!(shown.len() + 1, d.sections.len());
    for s in &shown {
        assert!(text.contains(&s.title), "terminal misses {}", s.title);
        assert!(
            md.contains(&format!("## {}", s.title)),
            "markdown misses {}",
            s.title
        );
    }
    assert!(
        text.contains("code_version=after") && text.contains("Concurrency wall"),
        "{text}"
    );
    assert!(text.contains("after is faster than before"), "{text}");
    // Every Markdown table row has as many cells as its header.
    let mut cols = None;
    for l in md.lines() {
        if l.starts_with('|') {
            let n = l.matches(" | ").count();
            if l.starts_with("|---") {
                continue;
            }
            match cols {
                None => cols = Some(n),
                Some(c) => assert_eq!(c, n, "{l}"),
            }
        } else {
            cols = None;
        }
    }

    let out = render(Format::Json, &input).unwrap();
    let v = common::valid_report(&out);
    assert_eq!(v["comparisons"][0]["direction"], "decrease");
    // The JSON text is the terminal's and Markdown's sentences.
    let sections = v["text"].as_array().unwrap();
    assert_eq!(sections.len(), shown.len());
    for (j, s) in sections.iter().zip(&shown) {
        assert_eq!(j["section"], s.title.as_str());
        assert_eq!(j["tables"].as_array().unwrap().len(), s.text_tables().len());
    }
}

#[test]
fn the_schema_rejects_a_wrong_document() {
    let validator = common::report_validator();
    assert!(!validator.is_valid(&serde_json::json!({"schema": "firsttoken.report.v1"})));
    assert!(!validator.is_valid(
        &serde_json::json!({"schema": "other", "sessions": [], "analysis": {}, "comparisons": [], "text": []})
    ));
}

/// A session where the `agent` path answers every turn with a tool call
/// (first at 120 ms + k, no text) and `chat` answers with text: the report
/// shows a first-output table with the agent's turns only, in every
/// format, and the JSON report (valid against its schema) carries it.
#[test]
fn tool_call_turns_get_a_first_output_table() {
    use firsttoken_analyze::{Frame, GroupKey, Settings, analyze};
    use firsttoken_record::FirstOutput;
    let sessions = vec![common::meta("s", "v1")];
    let mut rows = Vec::new();
    for k in 0..40u64 {
        let mut chat = common::row("s", 2 * k, "warm", "chat", 300.0 + k as f64);
        chat.sample.first_output_ms = chat.sample.ttft_ms;
        chat.sample.first_output = Some(FirstOutput::Text);
        rows.push(chat);
        let mut agent = common::row("s", 2 * k + 1, "warm", "agent", 0.0);
        let s = &mut agent.sample;
        s.ttft_ms = None;
        s.last_token_ms = None;
        s.tokens_per_s = None;
        s.ttftc_ms = Some(120.0 + k as f64);
        s.first_output_ms = s.ttftc_ms;
        s.first_output = Some(FirstOutput::ToolCall);
        rows.push(agent);
    }
    let keys = GroupKey::parse_list("path").unwrap();
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let analysis = analyze(&frame, &sessions, &keys, &Settings::new(7));
    assert_eq!(
        analysis.first_output.len(),
        1,
        "{:#?}",
        analysis.first_output
    );
    let agent = &analysis.first_output[0];
    assert_eq!(agent.pooled.n, 40);
    let p50 = agent.pooled.p50.estimate().expect("p50").point;
    assert!((p50 - 139.5).abs() < 1e-9, "{p50}");

    let input = ReportInput::new(&sessions, &analysis, &[]);
    let text = render(Format::Terminal, &input).unwrap();
    assert!(
        text.contains("first output of the turns that called a tool"),
        "{text}"
    );
    let row = text
        .lines()
        .skip_while(|l| !l.contains("first output of the turns"))
        .find(|l| l.contains("agent"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("140 ms") && row.contains(" 40 "), "{row}");
    let md = render(Format::Markdown, &input).unwrap();
    assert!(md.contains("first output of the turns"), "{md}");
    let v = common::valid_report(&render(Format::Json, &input).unwrap());
    assert_eq!(
        v["analysis"]["first_output"][0]["pooled"]["metric"],
        "first_output"
    );

    // Without a tool call there is no such table, nor key.
    let (sessions, _, analysis, _) = common::before_after();
    let input = ReportInput::new(&sessions, &analysis, &[]);
    assert!(
        !render(Format::Terminal, &input)
            .unwrap()
            .contains("tool-call turns")
    );
    let v = common::valid_report(&render(Format::Json, &input).unwrap());
    assert!(v["analysis"].get("first_output").is_none());
}
