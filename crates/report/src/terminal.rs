//! The report for a terminal: headed sections, tables that fit 100 columns.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table, Width};

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

/// Only the findings section of `input`'s report, for a terminal at most
/// `width` columns wide (the demo's first screen; the rest is one command
/// away).
pub fn findings(input: &ReportInput<'_>, width: u16) -> String {
    let mut doc = build(input);
    doc.sections
        .retain(|s| s.id == crate::doc::SectionId::Findings);
    render(&doc, width)
}

/// Render `doc` for a terminal, at most `width` columns wide: the sections
/// the text formats show ([`crate::doc::Section::in_text`]), their lines
/// and the tables' columns they reach.
pub fn render(doc: &Doc, width: u16) -> String {
    let mut out = String::from("firsttoken report\n");
    for s in doc.sections.iter().filter(|s| s.in_text()) {
        out.push_str(&format!("\n== {}\n", s.title));
        for (l, mark) in s.text_lines() {
            for w in wrap(l, usize::from(width).max(24), mark.depth) {
                out.push_str(&w);
                out.push('\n');
            }
        }
        for t in s.text_tables() {
            if !t.caption.is_empty() {
                for w in wrap(&t.caption, usize::from(width).max(24), 0) {
                    out.push_str(&w);
                    out.push('\n');
                }
            }
            let mut table = Table::new();
            table
                .load_style(UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
            table.set_header(t.header.clone());
            let rows: Vec<Vec<String>> = t
                .rows
                .iter()
                .map(|r| r.iter().enumerate().map(|(i, c)| stacked(i, c)).collect())
                .collect();
            let floors = word_floors(&t.header, &rows, width);
            for r in rows {
                table.add_row(r);
            }
            for (i, floor) in floors.into_iter().enumerate() {
                if let Some(c) = table.column_mut(i) {
                    if i > 0 {
                        c.set_cell_alignment(CellAlignment::Right);
                    }
                    if let Some(w) = floor {
                        c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
                    }
                }
            }
            out.push_str(&table.to_string());
            out.push('\n');
            if let Some(more) = t.more_line() {
                out.push_str(&format!("  {more}\n"));
            }
        }
    }
    out
}

/// A cell laid out in lines that break where a reader expects, so a narrow
/// column never splits a number: a label (first column) as it is, to be
/// wrapped between its words; an interval under its point, a withheld
/// value's counts under its reason.
fn stacked(column: usize, cell: &str) -> String {
    if column == 0 {
        return cell.to_string();
    }
    cell.replace(" [", "\n[").replace(" (n = ", "\n(n = ")
}

/// The least width of each column that keeps its longest word whole
/// (padding included): every column when the table still fits `width`
/// that way, else the label column only, so a label never breaks inside
/// a word (`code_version=af|ter`).
fn word_floors(header: &[String], rows: &[Vec<String>], width: u16) -> Vec<Option<u16>> {
    let longest = |i: usize| {
        std::iter::once(header.get(i))
            .chain(rows.iter().map(|r| r.get(i)))
            .flatten()
            .flat_map(|c| c.split_whitespace())
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    let mut floors: Vec<u16> = (0..header.len())
        .map(|i| u16::try_from(longest(i) + 2).unwrap_or(u16::MAX))
        .collect();
    let borders = floors.len() + 1;
    // A label whole on one line, when the other columns' words still fit.
    let label = rows
        .iter()
        .filter_map(|r| r.first())
        .map(|c| c.chars().count() + 2)
        .max()
        .unwrap_or(0);
    let rest: usize = floors.iter().skip(1).map(|&f| usize::from(f)).sum();
    if let Some(first) = floors.first_mut()
        && label + rest + borders <= usize::from(width)
    {
        *first = (*first).max(u16::try_from(label).unwrap_or(u16::MAX));
    }
    let total: usize = floors.iter().map(|&f| usize::from(f)).sum::<usize>() + borders;
    if total <= usize::from(width) {
        floors.into_iter().map(Some).collect()
    } else {
        floors
            .into_iter()
            .enumerate()
            .map(|(i, f)| (i == 0).then_some(f))
            .collect()
    }
}

/// The words of a line, a label's parts glued by ` · ` kept as one
/// (`before · chat`), so a label never breaks across lines; likewise a
/// pointer (`→ §routes`).
fn words(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut glue = false;
    for w in line.split_whitespace() {
        match out.last_mut() {
            Some(last) if w == "·" => {
                last.push_str(" ·");
                glue = true;
            }
            _ if w == "→" => {
                out.push(w.to_string());
                glue = true;
            }
            Some(last) if glue => {
                last.push(' ');
                last.push_str(w);
                glue = false;
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// Word-wrap `line` to `width` columns, indent included: `  ` before the
/// first line, `    ` before the rest, and two more for each `depth`
/// (a line under the one before it).
fn wrap(line: &str, width: usize, depth: usize) -> Vec<String> {
    let step = "  ".repeat(depth);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in words(line) {
        let word = word.as_str();
        let room = width.saturating_sub(step.len() + if out.is_empty() { 2 } else { 4 });
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > room {
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
        .map(|(i, l)| format!("{step}{}{l}", if i == 0 { "  " } else { "    " }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_break_between_numbers_not_inside_them() {
        assert_eq!(
            stacked(0, "after · chat · emulated"),
            "after · chat · emulated"
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
        let w = wrap("alpha beta gamma delta epsilon", 16, 0);
        assert_eq!(w, vec!["  alpha beta", "    gamma delta", "    epsilon"]);
        assert_eq!(wrap("", 10, 0), vec!["  "]);
        // A line under another is indented under it, wrapped in the same width.
        let w = wrap("alpha beta gamma delta", 16, 1);
        assert_eq!(w, vec!["    alpha beta", "      gamma", "      delta"]);
        // A label's parts stay together.
        let w = wrap("alpha beta before · chat · emulated gamma", 30, 0);
        assert_eq!(
            w,
            vec!["  alpha beta", "    before · chat · emulated", "    gamma"]
        );
    }
}
