//! One layout for every format (issue 23): every section's sentences and
//! tables reach the terminal, Markdown, the JSON text and the page alike;
//! the cold probes are a table everywhere; a run opens every format.

mod common;

use common::{escaped, flat};
use firsttoken_record::run::{ClockOffset, RunInfo, RunMember, RunState, RunView, run_start};
use firsttoken_report::doc::{Reach, SectionId, build};
use firsttoken_report::{Format, ReportInput, render, run_head};

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
    let checked = every_format_shows(&input);
    assert!(checked > 20, "{checked} lines checked");
}

/// The engine's metrics (issue 28), differenced from /metrics text as vLLM
/// writes it, are one more section every format shows.
#[test]
fn the_engines_metrics_reach_every_format() {
    use firsttoken_record::{EngineScrape, ScrapeMoment, UtcTime};
    let (sessions, _, mut analysis, cmp) = common::before_after_compared();
    let (.., frame) = common::before_after();
    let scrape = |moment, ms, body: &str| EngineScrape {
        session_id: sessions[0].id.clone(),
        moment,
        taken_at: UtcTime::from_unix_ms(ms),
        url: "http://127.0.0.1:8000/metrics".into(),
        status: Some(200),
        body: Some(body.into()),
        error: None,
    };
    let scrapes = [
        scrape(
            ScrapeMoment::Start,
            0,
            include_str!("../../analyze/tests/fixtures/vllm_metrics_start.txt"),
        ),
        scrape(
            ScrapeMoment::End,
            30_000,
            include_str!("../../analyze/tests/fixtures/vllm_metrics_end.txt"),
        ),
    ];
    analysis.engine_metrics = firsttoken_analyze::engine_metrics::engine_metrics(&frame, &scrapes);
    let comparisons = [cmp];
    let input = ReportInput::new(&sessions, &analysis, &comparisons);
    let doc = build(&input);
    let s = doc
        .sections
        .iter()
        .find(|s| s.id == SectionId::EngineMetrics)
        .expect("the section");
    assert_eq!(s.tables.len(), 2, "histograms and counters");
    assert!(
        s.lines
            .iter()
            .any(|l| l.contains("vllm:time_to_first_token_seconds")
                && l.contains("median in (40 ms, 60 ms]")),
        "{:?}",
        s.lines
    );
    every_format_shows(&input);
    let v = json_of(&input);
    let ttft = v["analysis"]["engine_metrics"]["sessions"][0]["histograms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "vllm:time_to_first_token_seconds")
        .expect("the engine's TTFT histogram")
        .clone();
    assert_eq!(
        ttft["quantiles"][0],
        serde_json::json!({"q": 0.5, "lower": 0.04, "upper": 0.06})
    );
}

/// Every section of `input`'s layout, in every format; the lines checked.
fn every_format_shows(input: &ReportInput<'_>) -> usize {
    let doc = build(input);
    let terminal = flat(&render(Format::Terminal, input).unwrap());
    let markdown = render(Format::Markdown, input).unwrap();
    let page = render(Format::Html, input).unwrap();
    let v = json_of(input);
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
    checked
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
    assert!(cold.contains("┆ − warm"), "{cold}");
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

fn member(segment: u32, session: &str, clock: Option<ClockOffset>, began: f64) -> RunMember {
    RunMember {
        session_id: session.into(),
        run_id: "r1".into(),
        segment,
        segments: 2,
        segment_requests: 20,
        ranges: std::iter::once(0..20).collect(),
        clock,
        began_at_ms: Some(began),
        heartbeat_at_ms: Some(began + 1000.0),
        heartbeat_every_ms: Some(500.0),
    }
}

/// The before/after pair as one run of two agents, listed segment 1 first.
fn run_view(sessions: &[firsttoken_record::session::SessionMeta]) -> RunView {
    let after = member(1, "after", None, 1_000_003.0);
    let before = member(
        0,
        "before",
        Some(ClockOffset {
            offset_ms: 1.5,
            uncertainty_ms: 0.2,
        }),
        1_000_000.0,
    );
    let members = vec![(after, sessions[1].clone()), (before, sessions[0].clone())];
    let start = run_start(&members.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>());
    RunView {
        info: RunInfo {
            run_id: "r1".into(),
            created_at: "2026-11-30T02:00:00.000Z".parse().unwrap(),
            segments: 2,
            planned_requests: 40,
            config_hash: "abc".into(),
            start_at: None,
        },
        members,
        state: RunState::Complete,
        start,
        counted: 40,
    }
}

#[test]
fn a_run_opens_every_format_with_its_head() {
    let (sessions, _, analysis, _) = common::before_after();
    assert_eq!(sessions[0].id, "before");
    let run = run_view(&sessions);
    // The lines `report --run` printed before the report moved here.
    let head = [
        "run r1 · complete · 40 of 40 planned requests stored · 2 segments",
        "  segment 0/2 · vantage test · network loopback · host test · session before · clock +1.5 ms ± 0.2 ms",
        "  segment 1/2 · vantage test · network loopback · host test · session after · clock not measured",
        "start spread across 2 segments: 3.0 ms (store clock; each agent's clock known to ± 0.2 ms)",
        "no concurrency verdict across agents: an agent measured no clock offset to the store",
    ];
    assert_eq!(run_head(&run), head);
    let input = ReportInput::new(&sessions, &analysis, &[]).with_run(&run);

    let terminal = render(Format::Terminal, &input).unwrap();
    let mut lines = terminal.lines().skip_while(|l| !l.starts_with("== "));
    assert_eq!(lines.next(), Some("== Run"));
    let block: Vec<&str> = lines.take_while(|l| !l.is_empty()).collect();
    let expected: Vec<String> = head.iter().map(|l| format!("  {l}")).collect();
    assert_eq!(flat(&block.join("\n")), flat(&expected.join("\n")));
    assert!(block[1].starts_with("    segment 0/2"), "{}", block[1]);
    for l in terminal.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l}");
    }

    let md = render(Format::Markdown, &input).unwrap();
    let first = md.lines().find(|l| l.starts_with("## ")).unwrap();
    assert_eq!(first, "## Run");
    assert!(md.contains(&format!("\n- {}\n", head[0])), "{md}");
    assert!(
        md.contains(&format!("\n  - {}\n", head[1].trim_start())),
        "{md}"
    );

    let v = json_of(&input);
    assert_eq!(v["run"]["text"], serde_json::json!(head));
    assert_eq!(v["text"][0]["section"], "Run");
    assert_eq!(v["text"][0]["lines"], serde_json::json!(head));
    assert_eq!(v["run"]["run_id"], "r1");
    assert_eq!(v["run"]["counted_requests"], 40);
    assert_eq!(v["run"]["state"]["state"], "complete");
    assert_eq!(v["run"]["start"]["cross_agent"]["verdict"], "unknown");
    let members = v["run"]["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[1]["clock"]["offset_ms"], 1.5);
    assert_eq!(members[0]["heartbeat_every_ms"], 500.0);
    // Without a run there is no run object and no run section.
    let plain = json_of(&ReportInput::new(&sessions, &analysis, &[]));
    assert!(plain.get("run").is_none());
    assert_ne!(plain["text"][0]["section"], "Run");

    let page = render(Format::Html, &input).unwrap();
    let main = &page[page.find("<main>").unwrap()..];
    assert!(
        main.starts_with("<main>\n<section id=\"run\">"),
        "{}",
        &main[..80]
    );
    assert!(page.contains(
        r##"<nav>
<a href="#run">Run</a>"##
    ));
    for l in head {
        assert!(
            page.contains(&escaped(l.trim_start())),
            "the page lacks {l}"
        );
    }
}
