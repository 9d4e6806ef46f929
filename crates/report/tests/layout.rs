//! One layout for every format (issue 23): every section's sentences and
//! tables reach the terminal, Markdown, the JSON text and the page alike;
//! the cold probes are a table everywhere.

mod common;

use common::{escaped, flat};
use firsttoken_report::doc::{Reach, SectionId, build};
use firsttoken_report::{Format, ReportInput, render};

fn json_of(input: &ReportInput<'_>) -> serde_json::Value {
    common::valid_report(&render(Format::Json, input).unwrap())
}

/// A Markdown table row as the Markdown report prints it.
fn md_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |", cells.join(" | "))
}

#[test]
fn every_format_shows_every_sentence_and_table_of_the_layout() {
    let (sessions, _, analysis, cmp) = common::before_after_compared();
    let comparisons = [cmp];
    let input = ReportInput::new(&sessions, &analysis, &comparisons);
    let doc = build(&input);
    let terminal = flat(&render(Format::Terminal, &input).unwrap());
    let markdown = render(Format::Markdown, &input).unwrap();
    let page = render(Format::Html, &input).unwrap();
    let v = json_of(&input);
    let text = v["text"].as_array().unwrap();
    let mut checked = 0;
    for s in &doc.sections {
        // The page: every title, line and table of every section.
        let at = page
            .find(&format!(r#"<section id="{}">"#, s.id.anchor()))
            .unwrap_or_else(|| panic!("the page lacks {:?}", s.id));
        let end = at + page[at..].find("</section>").unwrap();
        let part = &page[at..end];
        assert!(part.contains(&escaped(&s.title)), "{}", s.title);
        for (l, mark) in s.marked() {
            // A finding is a link on the page: its statement, ranked.
            let said = mark.finding.as_ref().map_or(l, |f| f.statement.as_str());
            assert!(part.contains(&escaped(said)), "the page lacks {said}");
        }
        for t in &s.tables {
            for h in &t.header {
                assert!(part.contains(&escaped(h)), "the page lacks the column {h}");
            }
            for r in &t.rows {
                assert!(
                    part.contains(&escaped(&r[0])),
                    "the page lacks the row {r:?}"
                );
            }
        }
        if let Some(intro) = s.intro {
            assert!(part.contains(&escaped(intro)));
        }
        if !s.in_text() {
            assert_eq!(
                s.id,
                SectionId::Typical,
                "only the plot is the page's alone"
            );
            continue;
        }
        // The text formats: the lines, and the tables' columns they reach.
        let j = text
            .iter()
            .find(|j| j["section"] == s.title.as_str())
            .unwrap_or_else(|| panic!("the JSON text lacks {}", s.title));
        let lines: Vec<&str> = j["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        for (l, _) in s.text_lines() {
            assert!(terminal.contains(&flat(l)), "the terminal lacks {l}");
            assert!(markdown.contains(l), "Markdown lacks {l}");
            assert!(lines.contains(&l), "the JSON text lacks {l}");
            checked += 1;
        }
        let tables = s.text_tables();
        assert_eq!(j["tables"].as_array().unwrap().len(), tables.len());
        for (t, jt) in tables.iter().zip(j["tables"].as_array().unwrap()) {
            assert!(markdown.contains(&md_row(&t.header)), "{:?}", t.header);
            assert_eq!(jt["header"], serde_json::json!(t.header));
            for r in &t.rows {
                assert!(markdown.contains(&md_row(r)), "Markdown lacks {r:?}");
            }
            assert_eq!(jt["rows"], serde_json::json!(t.rows));
        }
        // A page-only table stays off the text formats.
        for t in s.tables.iter().filter(|t| t.reach == Reach::Page) {
            if !t.caption.is_empty() {
                assert!(!markdown.contains(&t.caption), "{}", t.caption);
            }
        }
    }
    assert!(checked > 20, "{checked} lines checked");
}

#[test]
fn the_cold_probes_are_a_table_in_every_format() {
    let (sessions, _, analysis) = common::inconclusive();
    let probes = &analysis.cold[0].probes;
    assert_eq!(probes.len(), 3, "the fixture sends three cold probes");
    let input = ReportInput::new(&sessions, &analysis, &[]);

    let terminal = render(Format::Terminal, &input).unwrap();
    let cold = &terminal[terminal.find("== Cold start").unwrap()..];
    let cold = &cold[..cold[3..].find("\n== ").map_or(cold.len(), |i| i + 3)];
    assert!(cold.contains("┆ excess over warm"), "{cold}");
    for p in probes {
        let seq = format!("┆ {} ┆ chat ┆", p.seq);
        assert!(
            cold.contains(&seq),
            "probe {} in the terminal:\n{cold}",
            p.seq
        );
    }
    for l in terminal.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l}");
    }

    let md = render(Format::Markdown, &input).unwrap();
    for p in probes {
        assert!(
            md.contains(&format!("| flat | {} | chat |", p.seq)),
            "probe {} in Markdown",
            p.seq
        );
    }

    let v = json_of(&input);
    let section = v["text"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["section"] == "Cold start")
        .unwrap();
    let table = &section["tables"][0];
    assert_eq!(table["header"][0], "session");
    assert_eq!(table["rows"].as_array().unwrap().len(), probes.len());
    assert_eq!(table["rows"][0][1], probes[0].seq.to_string());

    // The page has the room for when each probe went out; the text does not.
    let page = render(Format::Html, &input).unwrap();
    let at = page.find(r#"<section id="cold">"#).unwrap();
    let part = &page[at..at + page[at..].find("</section>").unwrap()];
    assert!(part.contains("<th>started (UTC)</th>"), "{part}");
    assert!(part.contains(&probes[0].started_at), "{part}");
    assert!(!md.contains("started (UTC)"));
    assert!(!terminal.contains(&probes[0].started_at));
}
