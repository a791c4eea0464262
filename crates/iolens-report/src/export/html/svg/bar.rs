//! Horizontal bar charts: one row per category, groups of bars side by side or stacked.

use std::fmt::Write;

use super::{
    close_svg, colour, escape, format_value, frame_with_x_grid, legend, legend_extra, no_data, open_svg,
    Axis, Entry, Frame, Scale, LEFT, RIGHT, TOP, WIDTH,
};

/// One colour of bars: a value per category.
#[derive(Debug, Clone)]
pub struct BarGroup {
    pub name: String,
    pub values: Vec<f64>,
}

/// Horizontal bars, one row per category; groups side by side, or stacked into one bar.
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub categories: Vec<String>,
    pub groups: Vec<BarGroup>,
    pub stacked: bool,
    pub value_axis: Axis,
}

impl BarChart {
    pub fn new(title: &str, categories: Vec<String>, value_axis: Axis) -> BarChart {
        BarChart { title: title.into(), categories, groups: Vec::new(), stacked: false, value_axis }
    }

    pub fn render(&self, out: &mut String) {
        let value =
            |g: &BarGroup, c: usize| g.values.get(c).copied().filter(|v| v.is_finite()).unwrap_or(0.0);
        if self.categories.is_empty() || self.groups.is_empty() {
            return no_data(out, &self.title, "no data to plot");
        }
        let extent: Vec<f64> = if self.stacked {
            (0..self.categories.len())
                .map(|c| self.groups.iter().map(|g| value(g, c).max(0.0)).sum())
                .collect()
        } else {
            self.groups.iter().flat_map(|g| (0..self.categories.len()).map(move |c| value(g, c))).collect()
        };
        let mut axis = self.value_axis.clone();
        axis.scale = Scale::Linear;
        axis.categories.clear();
        let Some(vd) = axis.domain(extent.iter().copied().chain([0.0])) else {
            return no_data(out, &self.title, "no data to plot");
        };
        let per_bar = 16.0;
        let rows = if self.stacked { 1 } else { self.groups.len() };
        let row_height = per_bar * rows as f64 + 10.0;
        let label_width =
            self.categories.iter().map(|c| c.chars().count()).max().unwrap_or(4).clamp(4, 34) as f64 * 7.0;
        let left = (label_width + 12.0).max(LEFT);
        let names: Vec<Entry<'_>> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| Entry { name: &g.name, dashed: false, colour: i })
            .collect();
        let names = if names.len() > 1 { names } else { Vec::new() };
        let frame = Frame {
            left,
            top: TOP + legend_extra(&names),
            width: WIDTH - left - RIGHT,
            height: row_height * self.categories.len() as f64,
        };
        let height = frame.top + frame.height + 50.0;
        open_svg(out, height, &self.title);
        legend(out, &names);
        let vx = |v: f64| frame.left + (v - vd.0) / (vd.1 - vd.0) * frame.width;
        let bottom = frame.top + frame.height;
        frame_with_x_grid(out, &frame, &axis.ticks(vd), vd, false);
        let zero = vx(0.0);
        for (c, category) in self.categories.iter().enumerate() {
            let row_top = frame.top + c as f64 * row_height + 5.0;
            let short_label: String = category.chars().take(34).collect();
            let _ = write!(
                out,
                r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end">{}<title>{}</title></text>"#,
                frame.left - 6.0,
                row_top + row_height / 2.0,
                escape(&short_label),
                escape(category)
            );
            let mut stack = 0.0;
            for (g, group) in self.groups.iter().enumerate() {
                let v = value(group, c);
                let (x0, x1, y) = if self.stacked {
                    let v = v.max(0.0);
                    let span = (vx(stack), vx(stack + v), row_top);
                    stack += v;
                    span
                } else {
                    let (a, b) = (zero, vx(v));
                    (a.min(b), a.max(b), row_top + g as f64 * per_bar)
                };
                let _ = write!(
                    out,
                    r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                    (x1 - x0).max(0.5),
                    per_bar - 2.0,
                    colour(g),
                    escape(&format!("{category} {}", group.name)),
                    escape(&format_value(v, axis.unit))
                );
            }
        }
        let _ = write!(
            out,
            r##"<line x1="{zero:.1}" y1="{}" x2="{zero:.1}" y2="{bottom}" stroke="#333"/><text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>"##,
            frame.top,
            frame.left + frame.width / 2.0,
            bottom + 38.0,
            escape(&axis.label)
        );
        close_svg(out);
    }
}
