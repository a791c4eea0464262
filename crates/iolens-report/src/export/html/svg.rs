//! Charts as inline SVG text: line charts (linear, log10 or log2 axes, categorical x; `line`),
//! horizontal bar charts (grouped or stacked; `bar`) and timelines (`timeline`). This module
//! holds what they share: axes and ticks, value formats, the palette, frame and legend. Every
//! label passes through [`escape`]; nothing refers to anything outside the document.

use std::fmt::Write;

mod bar;
mod line;
mod timeline;

pub use bar::{BarChart, BarGroup};
pub use line::LineChart;
pub use timeline::{Span, Timeline};

/// Text made safe for HTML and SVG element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Colours told apart also in print and by most colour-blind readers (Okabe–Ito, then greys).
const PALETTE: [&str; 10] = [
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000", "#7f7f7f",
    "#b8860b",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    /// Ticks at powers of ten.
    Log10,
    /// Ticks at powers of two (block sizes, concurrency).
    Log2,
}

/// How tick labels and point tooltips print a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// 12.3k, 4.56M.
    Count,
    /// 4 KiB, 1 MiB (IEC).
    Bytes,
    /// MiB/s from bytes per second.
    BytesPerSec,
    /// MB/s (10^6 bytes), b_eff_io's unit; the value is already in MB/s.
    MegabytesPerSec,
    /// 850 ns, 12.4 µs, 3.10 ms.
    Nanos,
    /// Seconds: 1.20 s, 350 ms.
    Seconds,
    /// 0..1 printed as a percentage.
    Fraction,
    Plain,
}

const MIB: f64 = 1048576.0;
const GIB: f64 = 1073741824.0;

/// The size of one display unit on a linear axis, so that ticks are round in the unit they
/// print in (0, 200, 400 MiB/s rather than multiples of 10^8 bytes per second).
fn display_factor(unit: Unit, largest: f64) -> f64 {
    match unit {
        Unit::BytesPerSec if largest >= GIB => GIB,
        Unit::BytesPerSec => MIB,
        Unit::Bytes => {
            let mut f = 1.0;
            while largest >= f * 1024.0 && f < 1024f64.powi(5) {
                f *= 1024.0;
            }
            f
        }
        _ => 1.0,
    }
}

pub fn format_value(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        Unit::Count => short(v),
        Unit::Bytes => bytes(v),
        Unit::BytesPerSec if v.abs() >= GIB => format!("{} GiB/s", short(v / GIB)),
        Unit::BytesPerSec if v.abs() >= MIB => format!("{} MiB/s", short(v / MIB)),
        Unit::BytesPerSec => format!("{} KiB/s", short(v / 1024.0)),
        Unit::MegabytesPerSec => format!("{} MB/s", short(v)),
        _ if v == 0.0 => "0".into(),
        Unit::Nanos => nanos(v),
        Unit::Seconds => nanos(v * 1e9),
        Unit::Fraction => format!("{}%", short(v * 100.0)),
        Unit::Plain => short(v),
    }
}

/// Three significant digits with an SI suffix above ten thousand.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = match scaled.abs() {
        x if x == 0.0 || x >= 100.0 => 0,
        x if x >= 10.0 => 1,
        x if x >= 1.0 => 2,
        x if x >= 0.01 => 3,
        _ => return format!("{scaled:.2e}{suffix}"),
    };
    let text = format!("{scaled:.digits$}");
    // 2.50 → 2.5, 3.00 → 3: tick labels stay short.
    let text =
        if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
    format!("{text}{suffix}")
}

pub fn bytes(v: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut scaled = v;
    let mut unit = 0;
    while scaled.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    format!("{} {}", short(scaled), UNITS[unit])
}

pub fn nanos(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{} s", short(v / 1e9))
    } else if a >= 1e6 {
        format!("{} ms", short(v / 1e6))
    } else if a >= 1e3 {
        format!("{} µs", short(v / 1e3))
    } else {
        format!("{} ns", short(v))
    }
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub unit: Unit,
    /// Names of the positions 0, 1, 2, … on a categorical x axis (empty: numeric).
    pub categories: Vec<String>,
    /// Linear axes start at zero unless this is false (e.g. time offsets do anyway).
    pub from_zero: bool,
    /// Fixed range (linear axes), e.g. 0..1 for a CDF.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    pub fn new(label: &str, scale: Scale, unit: Unit) -> Axis {
        Axis { label: label.into(), scale, unit, categories: Vec::new(), from_zero: true, range: None }
    }

    pub fn categorical(label: &str, categories: Vec<String>) -> Axis {
        Axis { categories, ..Axis::new(label, Scale::Linear, Unit::Plain) }
    }

    pub fn with_range(mut self, low: f64, high: f64) -> Axis {
        self.range = Some((low, high));
        self
    }

    fn transform(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
            Scale::Log2 => v.log2(),
        }
    }

    fn usable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    /// The transformed range covering `values`, widened so a single value still spans some room.
    fn domain(&self, values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
        if !self.categories.is_empty() {
            return Some((-0.5, self.categories.len() as f64 - 0.5));
        }
        if let Some((lo, hi)) = self.range {
            return Some((self.transform(lo), self.transform(hi)));
        }
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for v in values.filter(|v| self.usable(*v)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if lo > hi {
            return None;
        }
        if self.scale == Scale::Linear {
            if self.from_zero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                hi = lo + lo.abs().max(1.0);
            }
            let step = self.linear_step(lo, hi);
            return Some(((lo / step).floor() * step, (hi / step).ceil() * step));
        }
        let (mut tlo, mut thi) = (self.transform(lo), self.transform(hi));
        tlo = tlo.floor();
        thi = thi.ceil();
        if thi - tlo < 1.0 {
            thi = tlo + 1.0;
        }
        Some((tlo, thi))
    }

    /// A round tick distance in the unit the labels print in.
    fn linear_step(&self, lo: f64, hi: f64) -> f64 {
        let factor = display_factor(self.unit, lo.abs().max(hi.abs()));
        nice_step((hi - lo) / factor / 5.0) * factor
    }

    /// Tick positions (in transformed units) and their labels.
    fn ticks(&self, (lo, hi): (f64, f64)) -> Vec<(f64, String)> {
        if !self.categories.is_empty() {
            return self.categories.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect();
        }
        match self.scale {
            Scale::Linear => {
                let step = self.linear_step(lo, hi);
                let first = (lo / step).ceil() as i64;
                let last = (hi / step).floor() as i64;
                (first..=last.min(first.saturating_add(50)))
                    .map(|k| {
                        let v = k as f64 * step;
                        (v, format_value(v, self.unit))
                    })
                    .collect()
            }
            Scale::Log10 | Scale::Log2 => {
                let base = if self.scale == Scale::Log10 { 10f64 } else { 2f64 };
                let span = (hi - lo).round() as i64;
                let every = (span / 8 + 1).max(1);
                (lo.round() as i64..=hi.round() as i64)
                    .filter(|k| (k - lo.round() as i64) % every == 0)
                    .map(|k| (k as f64, format_value(base.powi(k as i32), self.unit)))
                    .collect()
            }
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// Palette index; by default the series' position.
    pub colour: Option<usize>,
    /// Listed in the legend (a dashed twin of a series may stay out).
    pub in_legend: bool,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.into(), points, dashed: false, colour: None, in_legend: true }
    }
}

/// A point called out on a chart (the knee, the saturation point): a vertical guide at `x`,
/// and a ring at `y` when given.
#[derive(Debug, Clone)]
pub struct Mark {
    pub x: f64,
    pub y: Option<f64>,
    pub label: String,
}

const WIDTH: f64 = 760.0;
const LEFT: f64 = 92.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 46.0;

/// Fixed geometry of a plot area inside a chart's SVG.
struct Frame {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
}

fn open_svg(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        r#"<figure class="chart"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{t}"><text class="title" x="{x}" y="20" text-anchor="middle">{t}</text>"#,
        t = escape(title),
        x = WIDTH / 2.0
    );
}

fn close_svg(out: &mut String) {
    out.push_str("</svg></figure>\n");
}

/// One line of a legend.
struct Entry<'a> {
    name: &'a str,
    dashed: bool,
    colour: usize,
}

/// Where each legend entry goes: entries wrap onto further lines; returns the lines used.
fn legend_layout(names: &[Entry<'_>]) -> (Vec<(f64, f64)>, usize) {
    let mut x = LEFT;
    let mut line = 0;
    let mut at = Vec::with_capacity(names.len());
    for Entry { name, .. } in names {
        let width = 36.0 + 7.0 * name.chars().count() as f64;
        if x + width > WIDTH - RIGHT && x > LEFT {
            x = LEFT;
            line += 1;
        }
        at.push((x, 36.0 + 16.0 * line as f64));
        x += width;
    }
    (at, if names.is_empty() { 0 } else { line + 1 })
}

/// Extra height the legend's wrapped lines take above the plot.
fn legend_extra(names: &[Entry<'_>]) -> f64 {
    16.0 * legend_layout(names).1.saturating_sub(1) as f64
}

fn legend(out: &mut String, names: &[Entry<'_>]) {
    let (at, _) = legend_layout(names);
    for (Entry { name, dashed, colour: c }, (x, y)) in names.iter().zip(at) {
        if name.is_empty() {
            continue;
        }
        let label = escape(name);
        let dash = if *dashed { r#" stroke-dasharray="5 3""# } else { "" };
        let _ = write!(
            out,
            r#"<line x1="{x}" y1="{y}" x2="{x2}" y2="{y}" stroke="{c}" stroke-width="3"{dash}/><text class="legend" x="{tx}" y="{ty}">{label}</text>"#,
            x2 = x + 18.0,
            c = colour(*c),
            tx = x + 22.0,
            ty = y + 4.0
        );
    }
}

fn no_data(out: &mut String, title: &str, why: &str) {
    open_svg(out, 80.0, title);
    let _ = write!(
        out,
        r#"<text class="note" x="{}" y="52" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(why)
    );
    close_svg(out);
}

/// The plot area with a vertical grid line at each of `ticks` (positions in the domain `xd`),
/// labelled under the frame; a crowded axis (12 ticks or more, with `thin`) labels every k-th.
fn frame_with_x_grid(out: &mut String, f: &Frame, ticks: &[(f64, String)], xd: (f64, f64), thin: bool) {
    let bottom = f.top + f.height;
    let _ = write!(
        out,
        r#"<rect class="plot" x="{}" y="{}" width="{}" height="{}"/>"#,
        f.left, f.top, f.width, f.height
    );
    let every = if thin { ticks.len() / 12 + 1 } else { 1 };
    for (k, (t, label)) in ticks.iter().enumerate() {
        let px = f.left + (t - xd.0) / (xd.1 - xd.0) * f.width;
        let _ = write!(out, r#"<line class="grid" x1="{px:.1}" y1="{}" x2="{px:.1}" y2="{bottom}"/>"#, f.top);
        if k % every == 0 {
            let _ = write!(
                out,
                r#"<text class="tick" x="{px:.1}" y="{}" text-anchor="middle">{}</text>"#,
                bottom + 16.0,
                escape(label)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralizes_markup() {
        assert_eq!(escape(r#"<script>"a'&b"#), "&lt;script&gt;&quot;a&#39;&amp;b");
    }

    #[test]
    fn short_numbers_keep_three_digits() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(123.4), "123");
        assert_eq!(short(15_300.0), "15.3k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(bytes(4096.0), "4 KiB");
        assert_eq!(nanos(12_400.0), "12.4 µs");
        assert_eq!(format_value(3.0 * GIB, Unit::BytesPerSec), "3 GiB/s");
        assert_eq!(format_value(200.0 * MIB, Unit::BytesPerSec), "200 MiB/s");
        assert_eq!(format_value(8192.0, Unit::BytesPerSec), "8 KiB/s");
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let axis = Axis::new("x", Scale::Linear, Unit::Plain);
        let d = axis.domain([3.0, 97.0].into_iter()).unwrap();
        assert_eq!(d, (0.0, 100.0));
        let ticks: Vec<f64> = axis.ticks(d).into_iter().map(|t| t.0).collect();
        assert_eq!(ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    }

    #[test]
    fn log2_axis_spans_whole_powers() {
        let axis = Axis::new("bs", Scale::Log2, Unit::Bytes);
        let d = axis.domain([4096.0, 65536.0, 0.0].into_iter()).unwrap();
        assert_eq!(d, (12.0, 16.0));
        let labels: Vec<String> = axis.ticks(d).into_iter().map(|t| t.1).collect();
        assert_eq!(labels.first().map(String::as_str), Some("4 KiB"));
        assert_eq!(labels.last().map(String::as_str), Some("64 KiB"));
    }

    #[test]
    fn a_chart_without_usable_points_says_so() {
        let mut chart = LineChart::new(
            "t",
            Axis::new("x", Scale::Log10, Unit::Plain),
            Axis::new("y", Scale::Linear, Unit::Plain),
        );
        chart.series.push(Series::new("s", vec![(0.0, 1.0), (-1.0, f64::NAN)]));
        let mut out = String::new();
        chart.render(&mut out);
        assert!(out.contains("no data to plot"), "{out}");
    }

    #[test]
    fn labels_in_charts_are_escaped() {
        let mut chart = BarChart::new("<b>", vec!["a<i>".into()], Axis::new("v", Scale::Linear, Unit::Plain));
        chart.groups.push(BarGroup { name: "g&".into(), values: vec![1.0] });
        let mut out = String::new();
        chart.render(&mut out);
        assert!(!out.contains("<b>") && !out.contains("<i>") && !out.contains("g&:"), "{out}");
    }
}
