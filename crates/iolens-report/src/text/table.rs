//! The one plain text table of the terminal output; every renderer in [`crate::text`] lays its
//! rows out with it, so column alignment is the same in every command.

use std::fmt::Write;

/// Spaces between two columns.
pub const COLUMN_GAP: usize = 2;

/// A plain text table: the first column and any marked left-aligned, numbers right-aligned.
pub struct Table {
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
    /// Columns (besides the first) that hold words, not numbers.
    pub left_aligned: Vec<usize>,
}

impl Table {
    pub fn new(header: Vec<&'static str>) -> Table {
        Table { header, rows: Vec::new(), left_aligned: Vec::new() }
    }

    /// Each column's width in characters: its widest cell or its header.
    pub fn widths(&self) -> Vec<usize> {
        (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.header[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    pub fn render(&self, out: &mut String) {
        let widths = self.widths();
        let gap = " ".repeat(COLUMN_GAP);
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let sep = if i == 0 { "" } else { gap.as_str() };
                if i == 0 || self.left_aligned.contains(&i) {
                    let _ = write!(s, "{sep}{cell:<w$}", w = widths[i]);
                } else {
                    let _ = write!(s, "{sep}{cell:>w$}", w = widths[i]);
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(self.header.clone(), out);
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), out);
        }
    }
}
