//! Terminal, Markdown and JSON reports over a synthetic article-shaped
//! before/after pair: same sections in each, tables within 100 columns, JSON
//! valid against its checked-in schema.

mod common;

use firsttoken_report::{Format, ReportInput, doc, json, render};

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
    for s in &d.sections {
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
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let schema: serde_json::Value = serde_json::from_str(json::REPORT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["comparisons"][0]["direction"], "decrease");
    // The JSON text is the terminal's and Markdown's sentences.
    let sections = v["text"].as_array().unwrap();
    assert_eq!(sections.len(), d.sections.len());
    assert_eq!(sections[1]["section"], d.sections[1].title.as_str());
}

#[test]
fn the_schema_rejects_a_wrong_document() {
    let schema: serde_json::Value = serde_json::from_str(json::REPORT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&serde_json::json!({"schema": "firsttoken.report.v1"})));
    assert!(!validator.is_valid(
        &serde_json::json!({"schema": "other", "sessions": [], "analysis": {}, "comparisons": [], "text": []})
    ));
}
