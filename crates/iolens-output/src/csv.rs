//! The field rules every CSV file iolens writes follows, whichever crate writes it (run rows,
//! suite tables, DOE studies, per-operation exports): one quoting rule, one float form.

/// A float as CSV text, always with a decimal point or an exponent (`2.0`, never `2`), so a
/// reader types the column as floating point from any row.
pub fn float(x: f64) -> String {
    format!("{x:?}")
}

/// A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, quote or newline.
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}
