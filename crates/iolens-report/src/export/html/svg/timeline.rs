//! Timelines: rows (processes, ranks) with spans of time on a shared seconds axis.

use std::fmt::Write;

use super::{
    close_svg, colour, escape, frame_with_x_grid, legend, legend_extra, no_data, open_svg, Axis, Entry,
    Frame, Scale, Unit, LEFT, RIGHT, TOP, WIDTH,
};

/// A span of time on one row of a [`Timeline`].
#[derive(Debug, Clone)]
pub struct Span {
    pub row: usize,
    pub start_s: f64,
    pub end_s: f64,
    /// Colour index (e.g. read, write).
    pub kind: usize,
    pub title: String,
}

/// Rows (processes, ranks) with spans of time on a shared seconds axis.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub title: String,
    pub rows: Vec<String>,
    pub kinds: Vec<String>,
    pub spans: Vec<Span>,
}

impl Timeline {
    pub fn render(&self, out: &mut String) {
        let spans: Vec<&Span> = self
            .spans
            .iter()
            .filter(|s| s.row < self.rows.len() && s.start_s.is_finite() && s.end_s.is_finite())
            .collect();
        if spans.is_empty() {
            return no_data(out, &self.title, "no timed operations to plot");
        }
        let axis = Axis::new("time since the first event", Scale::Linear, Unit::Seconds);
        let Some(td) = axis.domain(spans.iter().flat_map(|s| [s.start_s, s.end_s])) else {
            return no_data(out, &self.title, "no timed operations to plot");
        };
        let row_height = 18.0;
        let left = (self.rows.iter().map(|r| r.chars().count()).max().unwrap_or(4).clamp(4, 24) as f64 * 7.0
            + 12.0)
            .max(LEFT);
        // Only the kinds drawn: a legend entry for nothing would send readers looking for it.
        let names: Vec<Entry<'_>> = self
            .kinds
            .iter()
            .enumerate()
            .filter(|(i, _)| spans.iter().any(|s| s.kind == *i))
            .map(|(i, k)| Entry { name: k, dashed: false, colour: i })
            .collect();
        let frame = Frame {
            left,
            top: TOP + legend_extra(&names),
            width: WIDTH - left - RIGHT,
            height: row_height * self.rows.len() as f64,
        };
        let bottom = frame.top + frame.height;
        open_svg(out, bottom + 50.0, &self.title);
        legend(out, &names);
        let tx = |t: f64| frame.left + (t - td.0) / (td.1 - td.0) * frame.width;
        frame_with_x_grid(out, &frame, &axis.ticks(td), td, false);
        for (r, row) in self.rows.iter().enumerate() {
            let label: String = row.chars().take(24).collect();
            let _ = write!(
                out,
                r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                frame.left - 6.0,
                frame.top + r as f64 * row_height + 13.0,
                escape(&label)
            );
        }
        for s in spans {
            let (x0, x1) = (tx(s.start_s.min(s.end_s)), tx(s.start_s.max(s.end_s)));
            let _ = write!(
                out,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                frame.top + s.row as f64 * row_height + 3.0,
                (x1 - x0).max(1.5),
                row_height - 6.0,
                colour(s.kind),
                escape(&s.title)
            );
        }
        let _ = write!(
            out,
            r#"<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            frame.left + frame.width / 2.0,
            bottom + 38.0,
            escape(&axis.label)
        );
        close_svg(out);
    }
}
