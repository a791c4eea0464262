//! Line charts: one or more series over a linear, log10, log2 or categorical x axis, with
//! marked points (the knee, the saturation point).

use std::fmt::Write;

use super::{
    close_svg, colour, escape, format_value, frame_with_x_grid, legend, legend_extra, no_data, open_svg,
    Axis, Entry, Frame, Mark, Series, LEFT, RIGHT, TOP, WIDTH,
};

#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
    /// Draw points as dots too (sparse measurements such as sweep points).
    pub dots: bool,
}

impl LineChart {
    pub fn new(title: &str, x: Axis, y: Axis) -> LineChart {
        LineChart { title: title.into(), x, y, series: Vec::new(), marks: Vec::new(), dots: true }
    }

    pub fn render(&self, out: &mut String) {
        let usable =
            |s: &Series| s.points.iter().filter(|(x, y)| self.x.usable(*x) && self.y.usable(*y)).count();
        if self.series.iter().map(usable).sum::<usize>() == 0 {
            return no_data(out, &self.title, "no data to plot");
        }
        let points = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let (Some(xd), Some(yd)) = (
            self.x.domain(points().filter(|p| self.y.usable(p.1)).map(|p| p.0)),
            self.y.domain(points().filter(|p| self.x.usable(p.0)).map(|p| p.1)),
        ) else {
            return no_data(out, &self.title, "no data to plot");
        };
        let names: Vec<Entry<'_>> = self
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| s.in_legend && !s.name.is_empty())
            .map(|(i, s)| Entry { name: &s.name, dashed: s.dashed, colour: s.colour.unwrap_or(i) })
            .collect();
        let top = TOP + legend_extra(&names);
        let height = top + 276.0 + 58.0;
        let frame = Frame { left: LEFT, top, width: WIDTH - LEFT - RIGHT, height: 276.0 };
        open_svg(out, height, &self.title);
        legend(out, &names);
        let px = |v: f64| frame.left + (self.x.transform(v) - xd.0) / (xd.1 - xd.0) * frame.width;
        let py =
            |v: f64| frame.top + frame.height - (self.y.transform(v) - yd.0) / (yd.1 - yd.0) * frame.height;
        axes(out, &frame, &self.x, xd, &self.y, yd);
        for (i, s) in self.series.iter().enumerate() {
            let i = s.colour.unwrap_or(i);
            let mut path = String::new();
            for &(x, y) in s.points.iter().filter(|(x, y)| self.x.usable(*x) && self.y.usable(*y)) {
                let _ = write!(path, "{}{:.1},{:.1}", if path.is_empty() { "M" } else { " L" }, px(x), py(y));
            }
            let dash = if s.dashed { r#" stroke-dasharray="6 4""# } else { "" };
            let _ = write!(
                out,
                r#"<path d="{path}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                colour(i)
            );
            if self.dots {
                for &(x, y) in s.points.iter().filter(|(x, y)| self.x.usable(*x) && self.y.usable(*y)) {
                    let xl = if self.x.categories.is_empty() {
                        format_value(x, self.x.unit)
                    } else {
                        self.x.categories.get(x as usize).cloned().unwrap_or_default()
                    };
                    let _ = write!(
                        out,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"><title>{}: {}, {}</title></circle>"#,
                        px(x),
                        py(y),
                        colour(i),
                        escape(&s.name),
                        escape(&xl),
                        escape(&format_value(y, self.y.unit))
                    );
                }
            }
        }
        for (k, m) in self.marks.iter().filter(|m| self.x.usable(m.x)).enumerate() {
            let x = px(m.x);
            // Labels near the right edge go left of their guide; several marks stack downwards.
            let (tx, anchor) =
                if x > frame.left + frame.width * 0.7 { (x - 4.0, "end") } else { (x + 4.0, "start") };
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{t}" x2="{x:.1}" y2="{b}" stroke="#444" stroke-dasharray="3 3"/><text class="mark" x="{tx:.1}" y="{ty}" text-anchor="{anchor}">{l}</text>"##,
                t = frame.top,
                b = frame.top + frame.height,
                ty = frame.top + 12.0 + 13.0 * k as f64,
                l = escape(&m.label)
            );
            if let Some(y) = m.y.filter(|y| self.y.usable(*y)) {
                let _ = write!(
                    out,
                    r##"<circle cx="{x:.1}" cy="{:.1}" r="7" fill="none" stroke="#c00" stroke-width="2"><title>{}</title></circle>"##,
                    py(y),
                    escape(&m.label)
                );
            }
        }
        close_svg(out);
    }
}

fn axes(out: &mut String, f: &Frame, x: &Axis, xd: (f64, f64), y: &Axis, yd: (f64, f64)) {
    let bottom = f.top + f.height;
    frame_with_x_grid(out, f, &x.ticks(xd), xd, true);
    for (t, label) in y.ticks(yd) {
        let py = bottom - (t - yd.0) / (yd.1 - yd.0) * f.height;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{}" y1="{py:.1}" x2="{}" y2="{py:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left,
            f.left + f.width,
            f.left - 6.0,
            py + 4.0,
            escape(&label)
        );
    }
    let _ = write!(
        out,
        r#"<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text><text class="axis" transform="translate(13 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        f.left + f.width / 2.0,
        bottom + 40.0,
        escape(&x.label),
        f.top + f.height / 2.0,
        escape(&y.label)
    );
}
