//! One snapshot per format over a fixed fixture (the before/after pair
//! with its warm-TTFT comparison), reviewed in the diff: any change to a
//! word or a number shows up here.

mod common;

use firsttoken_analyze::Comparison;
use firsttoken_report::{Format, ReportInput, render};

fn fixture() -> (
    Vec<firsttoken_record::session::SessionMeta>,
    firsttoken_analyze::Analysis,
    Vec<Comparison>,
) {
    let (sessions, _, analysis, cmp) = common::before_after_compared();
    (sessions, analysis, vec![cmp])
}

fn rendered(format: Format) -> String {
    let (sessions, analysis, comparisons) = fixture();
    // No rows: the per-request plots say "no data", which keeps the HTML
    // snapshot to the report's words and numbers.
    render(
        format,
        &ReportInput::new(&sessions, &analysis, &comparisons),
    )
    .unwrap()
}

#[test]
fn terminal() {
    insta::assert_snapshot!(rendered(Format::Terminal));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(rendered(Format::Markdown));
}

#[test]
fn json() {
    insta::assert_snapshot!(rendered(Format::Json));
}

#[test]
fn html() {
    // The tool version is the only thing that changes between releases.
    let page = rendered(Format::Html).replace(env!("CARGO_PKG_VERSION"), "VERSION");
    insta::assert_snapshot!(page);
}

#[test]
fn terminal_with_nothing_to_tell() {
    let (sessions, _, analysis) = common::inconclusive();
    insta::assert_snapshot!(
        render(
            Format::Terminal,
            &ReportInput::new(&sessions, &analysis, &[])
        )
        .unwrap()
    );
}
