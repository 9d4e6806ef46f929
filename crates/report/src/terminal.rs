//! The report for a terminal: headed sections, tables that fit 100 columns.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};

use crate::doc::{Doc, build};
use crate::{Exporter, ReportError, ReportInput};

/// The terminal format, at most `width` columns wide.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    /// Columns.
    pub width: u16,
}

impl Exporter for Terminal {
    fn export(&self, input: &ReportInput<'_>) -> Result<String, ReportError> {
        Ok(render(&build(input), self.width))
    }
}

/// Render `doc` for a terminal, at most `width` columns wide.
pub fn render(doc: &Doc, width: u16) -> String {
    let mut out = String::from("firsttoken report\n");
    for s in &doc.sections {
        out.push_str(&format!("\n== {}\n", s.title));
        for l in &s.lines {
            for w in wrap(l, usize::from(width).saturating_sub(4).max(20)) {
                out.push_str(&w);
                out.push('\n');
            }
        }
        for t in &s.tables {
            let mut table = Table::new();
            table
                .load_style(UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
            table.set_header(t.header.clone());
            for r in &t.rows {
                table.add_row(r.iter().enumerate().map(|(i, c)| stacked(i, c)));
            }
            for i in 1..t.header.len() {
                if let Some(c) = table.column_mut(i) {
                    c.set_cell_alignment(CellAlignment::Right);
                }
            }
            out.push_str(&table.to_string());
            out.push('\n');
        }
    }
    out
}

/// A cell laid out in lines that break where a reader expects, so a narrow
/// column never splits a number: a group's keys one per line (first
/// column), an interval under its point, a withheld value's counts under
/// its reason.
fn stacked(column: usize, cell: &str) -> String {
    if column == 0 && cell.contains('=') {
        return cell.replace(", ", "\n");
    }
    cell.replace(" [", "\n[").replace(" (n = ", "\n(n = ")
}

/// Word-wrap `line` to `width` characters: `  ` before the first line, `    ` before the rest.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in line.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out.iter()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { "  " } else { "    " }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_break_between_numbers_not_inside_them() {
        assert_eq!(
            stacked(0, "code_version=after, path=chat"),
            "code_version=after\npath=chat"
        );
        assert_eq!(
            stacked(1, "329 ms [320 ms, 349 ms]"),
            "329 ms\n[320 ms, 349 ms]"
        );
        assert_eq!(
            stacked(2, "too few samples (n = 9, needs 10)"),
            "too few samples\n(n = 9, needs 10)"
        );
        assert_eq!(stacked(0, "after → before"), "after → before");
    }

    #[test]
    fn wrap_keeps_words_and_width() {
        let w = wrap("alpha beta gamma delta epsilon", 12);
        assert_eq!(w, vec!["  alpha beta", "    gamma delta", "    epsilon"]);
        assert_eq!(wrap("", 10), vec!["  "]);
    }
}
