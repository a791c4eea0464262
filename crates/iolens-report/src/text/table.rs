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

    /// Shortens the last column's cells (paths, command lines) in the middle so that every row
    /// fits `columns` characters, keeping at least 24 of each cell: the start and the end (a
    /// file name) tell a path apart; the JSON keeps it whole.
    pub fn fit_last_column(&mut self, columns: usize) {
        let widths = self.widths();
        let Some((_, before)) = widths.split_last() else { return };
        let used: usize = before.iter().map(|w| w + COLUMN_GAP).sum();
        let room = columns.saturating_sub(used).max(24);
        for row in &mut self.rows {
            if let Some(last) = row.last_mut() {
                *last = shorten_path(last, room);
            }
        }
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

/// `path` within `width` characters: whole when it fits, else its start and its end (the file
/// name) around an ellipsis.
pub fn shorten_path(path: &str, width: usize) -> String {
    let chars: Vec<char> = path.chars().collect();
    if chars.len() <= width || width < 5 {
        return path.to_string();
    }
    let tail = (width - 1) * 2 / 3;
    let head = width - 1 - tail;
    let start: String = chars[..head].iter().collect();
    let end: String = chars[chars.len() - tail..].iter().collect();
    format!("{start}…{end}")
}
