//! The one table renderer: the reference's plain style (result tables, `compare` on a terminal)
//! and GitHub Markdown (`tables.md`, `compare` comments).

use tabled::builder::Builder;
use tabled::settings::{Padding, Style};

/// A titled table as plain strings, independent of rendering.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableData {
    /// Printed above the table.
    pub title: &'static str,
    /// Header cells.
    pub columns: Vec<String>,
    /// Formatted cells, one row per line.
    pub rows: Vec<Vec<String>>,
}

/// Header and rows in the reference's plain style: a dashed underline row, columns left-aligned
/// and separated by two spaces, no trailing blanks.
pub(crate) fn plain_body(table: &TableData) -> String {
    let mut b = Builder::default();
    b.push_record(table.columns.iter().map(String::as_str));
    b.push_record(table.columns.iter().map(|c| "-".repeat(c.len())));
    for row in &table.rows {
        b.push_record(row.iter().map(String::as_str));
    }
    let mut t = b.build();
    t.with(Style::empty()).with(Padding::new(0, 2, 0, 0));
    let mut out = String::new();
    for line in t.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Header and rows as a GitHub Markdown table (no trailing newline).
pub(crate) fn markdown_body(table: &TableData) -> String {
    let mut b = Builder::default();
    b.push_record(table.columns.iter().map(String::as_str));
    for row in &table.rows {
        b.push_record(row.iter().map(String::as_str));
    }
    let mut t = b.build();
    t.with(Style::markdown());
    t.to_string()
}

/// One table in the plain style under its title.
pub(crate) fn plain(table: &TableData) -> String {
    format!("{}\n{}", table.title, plain_body(table))
}

/// One table as Markdown under a bold title.
pub(crate) fn markdown(table: &TableData) -> String {
    format!("**{}**\n\n{}\n", table.title, markdown_body(table))
}
