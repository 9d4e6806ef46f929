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
