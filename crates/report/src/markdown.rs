//! The report as Markdown: `##` sections and pipe tables.

use crate::doc::{Doc, build};
use crate::{Exporter, ReportError, ReportInput};

/// The Markdown format, titled by the sessions it covers.
#[derive(Debug, Clone, Copy)]
pub struct Markdown;

impl Exporter for Markdown {
    fn export(&self, input: &ReportInput<'_>) -> Result<String, ReportError> {
        Ok(render(&build(input), &input.title()))
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Render `doc` as Markdown under a `# title`: the sections the text
/// formats show, a line under another as a nested item.
pub fn render(doc: &Doc, title: &str) -> String {
    let mut out = format!("# {}\n", cell(title));
    for s in doc.sections.iter().filter(|s| s.in_text()) {
        out.push_str(&format!("\n## {}\n\n", cell(&s.title)));
        for (l, mark) in s.text_lines() {
            // The findings are ranked: an ordered list, their own numbers.
            let bullet = if mark.finding.is_some() { "" } else { "- " };
            let indent = "  ".repeat(mark.depth);
            out.push_str(&format!("{indent}{bullet}{}\n", cell(l)));
        }
        for t in s.text_tables() {
            out.push('\n');
            if !t.caption.is_empty() {
                out.push_str(&format!("{}:\n\n", cell(&t.caption)));
            }
            out.push_str(&format!(
                "| {} |\n",
                t.header
                    .iter()
                    .map(|h| cell(h))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
            out.push_str(&format!(
                "|{}\n",
                t.header
                    .iter()
                    .enumerate()
                    .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                    .collect::<String>()
            ));
            for r in &t.rows {
                out.push_str(&format!(
                    "| {} |\n",
                    r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
                ));
            }
            if let Some(more) = t.more_line() {
                out.push_str(&format!("\n{}\n", cell(&more)));
            }
        }
    }
    out
}
