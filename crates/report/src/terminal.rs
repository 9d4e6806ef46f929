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
                table.add_row(r.clone());
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
    fn wrap_keeps_words_and_width() {
        let w = wrap("alpha beta gamma delta epsilon", 12);
        assert_eq!(w, vec!["  alpha beta", "    gamma delta", "    epsilon"]);
        assert_eq!(wrap("", 10), vec!["  "]);
    }
}
