//! One self-contained HTML page from iolens JSON results (`iolens report … --html`): inline
//! CSS, inline SVG charts and a few lines of inline script, and a Content-Security-Policy that
//! forbids every fetch, so the page opens the same offline, from a mail attachment or a CI
//! artifact. Each result gets a section drawn for its kind (run, sweep, saturate, …); the
//! kind is read from the document's shape, so results from before and after the output
//! contract's key renames both render.

mod network;
mod results;
mod stats;
mod suites;
pub mod svg;
mod trace;

use std::fmt::Write;

use serde_json::Value;

use svg::{escape, format_value, Unit};

/// What a result document is, told from its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    RepeatedRun,
    Sweep,
    Saturate,
    WriteModes,
    BeffIo,
    /// b_eff, the network benchmark (`iolens beff` under mpirun).
    Beff,
    Validate,
    Correlate,
    Doe,
    Trace,
    Quick,
    Compare,
    Monitor,
    /// An error document: the command failed before it had results.
    Failed,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::RepeatedRun => "run --repeat",
            Kind::Sweep => "sweep",
            Kind::Saturate => "saturate",
            Kind::WriteModes => "write-modes",
            Kind::BeffIo => "beff-io",
            Kind::Beff => "beff",
            Kind::Validate => "validate",
            Kind::Correlate => "correlate",
            Kind::Doe => "doe analyze",
            Kind::Trace => "trace / analyze",
            Kind::Quick => "quick",
            Kind::Compare => "compare",
            Kind::Monitor => "monitor",
            Kind::Failed => "failed command",
        }
    }
}

/// The kind of an iolens result, or why `doc` is none `iolens report` draws.
pub fn kind_of(doc: &Value) -> Result<Kind, String> {
    let Some(o) = doc.as_object() else {
        return Err("not a JSON object: not an iolens result".into());
    };
    let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
    let suite = o.get("suite").and_then(Value::as_str).unwrap_or("");
    let kind = if let Some(kind) = suite_kind(suite) {
        kind
    } else if o.get("benchmark").and_then(Value::as_str) == Some("b_eff")
        || (has("sizes_bytes") && has("results") && o.get("summary").is_some_and(Value::is_object))
    {
        Kind::Beff
    } else if has("curves") {
        let first_point = at(doc, &["curves", "0", "points", "0"]);
        if suite == "saturate" || first_point.is_some_and(|p| p.get("concurrency").is_some()) {
            Kind::Saturate
        } else {
            Kind::Sweep
        }
    } else if has("modes") {
        Kind::WriteModes
    } else if has("b_eff_io_mb_s") || has("b_eff_io") {
        Kind::BeffIo
    } else if has("sets") {
        Kind::Validate
    } else if has("anova") || has("level_means") {
        Kind::Doe
    } else if has("headlines") && has("parts") {
        Kind::Quick
    } else if has("comparisons") {
        Kind::Compare
    } else if o
        .get("metrics")
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|x| x.get("normalized_cc").is_some()))
    {
        Kind::Correlate
    } else if o.get("summary").is_some_and(Value::is_array) {
        Kind::RepeatedRun
    } else if has("aggregate") {
        Kind::Run
    } else if has("size_histogram") || (has("files") && has("processes")) {
        Kind::Trace
    } else if o.get("samples").and_then(Value::as_array).is_some() {
        Kind::Monitor
    } else if has("error") {
        Kind::Failed
    } else {
        return Err("not an iolens result `iolens report` knows: none of the keys of run, sweep, saturate, \
             write-modes, beff-io, beff, validate, correlate, doe analyze, trace, analyze, quick, compare or \
             monitor results\n  hint: pass the files iolens wrote with --json"
            .into());
    };
    Ok(kind)
}

/// The kind a suite names itself (`suite`), when the name is one the report draws.
fn suite_kind(suite: &str) -> Option<Kind> {
    Some(match suite {
        "sweep" => Kind::Sweep,
        "saturate" => Kind::Saturate,
        "write-modes" => Kind::WriteModes,
        "beff-io" => Kind::BeffIo,
        "validate" => Kind::Validate,
        _ => return None,
    })
}

/// A value at a path of object keys and array indices (`["curves", "0", "points"]`).
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, key| match v {
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        Value::Object(map) => map.get(*key),
        _ => None,
    })
}

/// The first of `paths` holding a number.
pub(crate) fn num(v: &Value, paths: &[&[&str]]) -> Option<f64> {
    paths.iter().find_map(|p| at(v, p).and_then(Value::as_f64))
}

pub(crate) fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

pub(crate) fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Bandwidth in bytes per second: `bw_bytes_s`, or the older `mib_s`.
pub(crate) fn bandwidth(v: &Value) -> Option<f64> {
    num(v, &[&["bw_bytes_s"]]).or_else(|| num(v, &[&["mib_s"]]).map(|m| m * 1048576.0))
}

/// A latency percentile in ns: `lat_ns.p99` (also `p99_9`/`p99.9`), or the older `p99_ns`.
pub(crate) fn latency(v: &Value, percentile: &str) -> Option<f64> {
    let dotted = percentile.replace('_', ".");
    let flat = format!("{percentile}_ns");
    num(v, &[&["lat_ns", percentile], &["lat_ns", &dotted], &[&flat]])
}

/// `(latency ns, fraction of operations at or below it)` from `lat_ns`: the histogram bins when
/// present, else the percentiles (with min at 0 and max at 1).
pub(crate) fn latency_cdf(lat: &Value) -> Vec<(f64, f64)> {
    let bins = array(lat, "bins");
    let total: f64 = bins.iter().filter_map(|b| num(b, &[&["count"]])).sum();
    if total > 0.0 {
        let max = num(lat, &[&["max"]]);
        let mut seen = 0.0;
        let mut points = Vec::new();
        for b in bins {
            let count = num(b, &[&["count"]]).unwrap_or(0.0);
            seen += count;
            // The overflow bin has no upper edge: the largest latency closes it.
            let Some(edge) = num(b, &[&["le_ns"]]).or(max) else { continue };
            if count > 0.0 || !points.is_empty() {
                points.push((edge, seen / total));
            }
            if seen >= total {
                break;
            }
        }
        return points;
    }
    let levels = [
        ("min", 0.0),
        ("p50", 0.5),
        ("p90", 0.9),
        ("p95", 0.95),
        ("p99", 0.99),
        ("p99_9", 0.999),
        ("p99_99", 0.9999),
        ("max", 1.0),
    ];
    let mut points: Vec<(f64, f64)> = levels
        .iter()
        .filter_map(|(key, q)| {
            let wrapped = serde_json::json!({ "lat_ns": lat });
            latency(&wrapped, key).map(|ns| (ns, *q))
        })
        .collect();
    points.sort_by(|a, b| a.1.total_cmp(&b.1));
    points
}

/// The page being built: sections in order, and their table of contents.
pub(crate) struct Page {
    body: String,
    toc: Vec<(String, String)>,
}

impl Page {
    pub(crate) fn out(&mut self) -> &mut String {
        &mut self.body
    }

    pub(crate) fn heading(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h3>{}</h3>", escape(text));
    }

    pub(crate) fn note(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    /// A table; columns after the first are right-aligned numbers unless they hold text.
    pub(crate) fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) {
        if rows.is_empty() {
            return;
        }
        self.body.push_str("<div class=\"scroll\"><table class=\"sortable\"><thead><tr>");
        for h in headers {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body.push_str("</tr></thead><tbody>\n");
        for row in rows {
            self.body.push_str("<tr>");
            for cell in row {
                // Numbers (with their unit) align right, as the style says; words, and sentences
                // that merely begin with a number, align left and may wrap.
                let numeric = cell.chars().count() <= 24
                    && cell.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
                let class = if numeric { "" } else { " class=\"t\"" };
                let _ = write!(self.body, "<td{class}>{}</td>", escape(cell));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</tbody></table></div>\n");
    }

    /// `name: value` pairs as a compact definition list.
    pub(crate) fn facts(&mut self, facts: &[(&str, String)]) {
        self.body.push_str("<dl class=\"facts\">");
        for (name, value) in facts.iter().filter(|(_, v)| !v.is_empty()) {
            let _ = write!(self.body, "<div><dt>{}</dt><dd>{}</dd></div>", escape(name), escape(value));
        }
        self.body.push_str("</dl>\n");
    }
}

/// A number for a table cell.
pub(crate) fn cell(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| "-".into(), |v| format_value(v, unit))
}

const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1b1b;background:#fafafa}\
header{background:#12355b;color:#fff;padding:14px 28px}header h1{margin:0;font-size:22px}\
header p{margin:4px 0 0;opacity:.85}nav{padding:8px 28px;background:#e8eef5}nav a{margin-right:16px;color:#12355b}\
main{padding:0 28px 40px;max-width:1100px}section{background:#fff;border:1px solid #dde3ea;border-radius:6px;\
padding:6px 20px 16px;margin:18px 0}h2{font-size:19px;color:#12355b}h2 small{color:#666;font-weight:normal}\
h3{font-size:15px;margin:18px 0 6px}.note{color:#555;font-size:13px}.warn{color:#8a4b00}.error{color:#b00020;font-weight:bold}\
figure.chart{margin:10px 0}figure.chart svg{width:100%;max-width:760px;height:auto;display:block}\
svg text{font-family:inherit;fill:#222}svg .title{font-size:15px;font-weight:600}svg .tick{font-size:11px;fill:#444}\
svg .axis{font-size:12px}svg .legend{font-size:12px}svg .mark{font-size:11px;fill:#a00}svg .note{font-size:13px;fill:#666}\
svg .plot{fill:#fcfcfd;stroke:#999}svg .grid{stroke:#e3e3e3}\
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:6px 0;font-size:13px}\
th,td{border-bottom:1px solid #e5e5e5;padding:3px 10px;text-align:right;white-space:nowrap}\
th:first-child,td:first-child,td.t{text-align:left}td.t{white-space:normal;min-width:60px;max-width:460px}th{background:#f1f4f8;cursor:pointer;user-select:none}\
dl.facts{display:flex;flex-wrap:wrap;gap:4px 24px;margin:8px 0}dl.facts div{display:flex;gap:6px}\
dt{color:#666}dd{margin:0;font-weight:600}ul.warnings{margin:4px 0;padding-left:20px}";

/// Sorting by a click on a column header: numbers by value (units such as "KiB" ignored), text
/// alphabetically.
const SCRIPT: &str = "\
document.querySelectorAll('table.sortable th').forEach(function(th,col){th.title='sort';\
th.addEventListener('click',function(){var body=th.closest('table').tBodies[0];\
var rows=Array.prototype.slice.call(body.rows);var up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';\
var key=function(r){var t=r.cells[col]?r.cells[col].textContent:'';var n=parseFloat(t);return isNaN(n)?t:n;};\
rows.sort(function(a,b){var x=key(a),y=key(b);var c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));\
return up?c:-c;});rows.forEach(function(r){body.appendChild(r);});});});";

/// One input of the report: a name for headings (the file it came from) and its JSON.
pub struct Source<'a> {
    pub name: &'a str,
    pub doc: &'a Value,
}

/// The report page for `sources`, in order. Fails, naming the source, on a document that is no
/// iolens result.
pub fn render(sources: &[Source<'_>], generator: &str) -> Result<String, String> {
    let kinds = sources
        .iter()
        .map(|s| kind_of(s.doc).map_err(|e| format!("{}: {e}", s.name)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut page = Page { body: String::new(), toc: Vec::new() };
    for (i, (source, kind)) in sources.iter().zip(&kinds).enumerate() {
        let id = format!("r{i}");
        page.toc.push((id.clone(), format!("{} ({})", source.name, kind.name())));
        let _ = writeln!(
            page.body,
            "<section id=\"{id}\"><h2>{} <small>{}</small></h2>",
            escape(source.name),
            escape(kind.name())
        );
        envelope(&mut page, source.doc);
        match kind {
            Kind::Run => results::run(&mut page, source.doc),
            Kind::RepeatedRun => results::repeated_run(&mut page, source.doc),
            Kind::Quick => results::quick(&mut page, source.doc),
            Kind::Compare => results::compare(&mut page, source.doc),
            Kind::Monitor => results::monitor(&mut page, source.doc),
            Kind::Failed => {}
            Kind::Sweep => suites::sweep(&mut page, source.doc),
            Kind::Saturate => suites::saturate(&mut page, source.doc),
            Kind::WriteModes => suites::write_modes(&mut page, source.doc),
            Kind::BeffIo => suites::beff_io(&mut page, source.doc),
            Kind::Beff => network::beff(&mut page, source.doc),
            Kind::Validate => stats::validate(&mut page, source.doc),
            Kind::Correlate => stats::correlate(&mut page, source.doc),
            Kind::Doe => stats::doe(&mut page, source.doc),
            Kind::Trace => trace::trace(&mut page, source.doc),
        }
        warnings(&mut page, source.doc);
        page.body.push_str("</section>\n");
    }
    let mut html = String::with_capacity(page.body.len() + 4096);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         script-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>iolens report</title><style>{STYLE}</style></head>\n<body><header><h1>iolens report</h1><p>{}</p></header>\n<nav>",
        escape(generator)
    );
    for (id, title) in &page.toc {
        let _ = write!(html, "<a href=\"#{id}\">{}</a>", escape(title));
    }
    let _ = write!(html, "</nav>\n<main>\n{}</main>\n<script>{SCRIPT}</script>\n</body></html>\n", page.body);
    Ok(html)
}

/// Who made the result, where and when: the output contract's envelope, where present.
fn envelope(page: &mut Page, doc: &Value) {
    let command = match doc.get("command") {
        Some(Value::Array(argv)) => {
            argv.iter().map(|a| a.as_str().unwrap_or("?")).collect::<Vec<_>>().join(" ")
        }
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let version = match doc.get("tool") {
        Some(Value::Object(_)) => {
            let tool = &doc["tool"];
            let mut v = text(tool, "version").unwrap_or_default();
            if let Some(commit) = text(tool, "git_commit") {
                v = format!("{v} (git {commit})");
            }
            v
        }
        _ => text(doc, "tool_version").unwrap_or_default(),
    };
    let host = doc.get("host").map_or_else(String::new, |h| {
        [text(h, "hostname"), text(h, "kernel"), text(h, "cpu_model")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
    });
    page.facts(&[
        ("command", command),
        ("iolens", version),
        ("started", text(doc, "started_at").unwrap_or_default()),
        ("ended", text(doc, "ended_at").unwrap_or_default()),
        ("host", host),
    ]);
    if doc.get("interrupted").and_then(Value::as_bool) == Some(true) {
        page.body.push_str("<p class=\"warn\">Interrupted: the figures cover the part that ran.</p>\n");
    }
    let error = match doc.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e @ Value::Object(_)) => text(e, "message").or_else(|| Some(e.to_string())),
        _ => None,
    };
    if let Some(e) = error {
        let _ = writeln!(page.body, "<p class=\"error\">Failed: {}</p>", escape(&e));
    }
}

/// Warnings as the contract writes them (`{code, message}`), or as plain strings.
fn warnings(page: &mut Page, doc: &Value) {
    let items: Vec<String> = array(doc, "warnings")
        .iter()
        .map(|w| match w {
            Value::String(s) => s.clone(),
            other => match (text(other, "code"), text(other, "message")) {
                (Some(c), Some(m)) => format!("{c}: {m}"),
                (c, m) => m.or(c).unwrap_or_else(|| other.to_string()),
            },
        })
        .collect();
    if items.is_empty() {
        return;
    }
    page.heading("Warnings");
    page.body.push_str("<ul class=\"warnings\">");
    for w in items {
        let _ = write!(page.body, "<li class=\"warn\">{}</li>", escape(&w));
    }
    page.body.push_str("</ul>\n");
}

/// Writes a rendered page by the rules of every result file (atomic for regular files); a
/// failed write is reported and fails the command.
pub fn write_page(path: &std::path::Path, page: &str) {
    iolens_output::console::check_write(path, crate::write_output(path, |w| w.write_all(page.as_bytes())));
}

/// `report.html` in the results directory `dir`: every result of `files` (names inside `dir`)
/// read back from what was just written, so the page shows exactly what the files hold. A file
/// that cannot be read is left out with a warning (its failed write was already reported).
pub fn write_results_page(dir: &std::path::Path, files: &[String], generator: &str) {
    let mut docs = Vec::new();
    for file in files {
        match crate::compare::read_result_file(&dir.join(file)) {
            Ok(doc) => docs.push((file.as_str(), doc)),
            Err(e) => iolens_output::errln!("iolens: warning: report.html leaves out {e}"),
        }
    }
    let sources: Vec<Source<'_>> = docs.iter().map(|(name, doc)| Source { name, doc }).collect();
    match render(&sources, generator) {
        Ok(page) => write_page(&dir.join("report.html"), &page),
        Err(e) => iolens_output::errln!("iolens: warning: no report.html: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_shape_of_the_document() {
        let cases = [
            (json!({"aggregate": {"iops": 1.0}, "agents": []}), Kind::Run),
            (json!({"summary": [], "runs": []}), Kind::RepeatedRun),
            (json!({"suite": "sweep", "curves": [{"points": [{"bs": 4096}]}]}), Kind::Sweep),
            (json!({"curves": [{"points": [{"concurrency": 1}]}]}), Kind::Saturate),
            (json!({"modes": []}), Kind::WriteModes),
            (json!({"b_eff_io": 1.0}), Kind::BeffIo),
            (json!({"b_eff_io_mb_s": 1.0}), Kind::BeffIo),
            (json!({"suite": "beff-io"}), Kind::BeffIo),
            (json!({"benchmark": "b_eff", "summary": {}, "results": []}), Kind::Beff),
            (json!({"sizes_bytes": [1], "results": [], "summary": {"processes": 2}}), Kind::Beff),
            (json!({"sets": []}), Kind::Validate),
            (json!({"metrics": [{"name": "iops", "normalized_cc": 0.5}]}), Kind::Correlate),
            (json!({"anova": []}), Kind::Doe),
            (json!({"size_histogram": [], "files": []}), Kind::Trace),
            (json!({"headlines": [], "parts": []}), Kind::Quick),
            (json!({"comparisons": []}), Kind::Compare),
            (json!({"samples": []}), Kind::Monitor),
            (json!({"error": {"code": "x", "message": "y"}}), Kind::Failed),
        ];
        for (doc, kind) in cases {
            assert_eq!(kind_of(&doc), Ok(kind), "{doc}");
        }
        assert!(kind_of(&json!({"hello": 1})).unwrap_err().contains("not an iolens result"));
        assert!(kind_of(&json!([1, 2])).is_err());
    }

    #[test]
    fn an_unknown_document_is_refused_naming_its_file() {
        let doc = json!({"hello": 1});
        let err = render(&[Source { name: "x.json", doc: &doc }], "t").unwrap_err();
        assert!(err.starts_with("x.json: not an iolens result"), "{err}");
    }

    #[test]
    fn old_and_new_key_names_read_the_same_figures() {
        let new = json!({"bw_bytes_s": 1048576.0, "lat_ns": {"p50": 900, "p99_9": 5000}});
        let old = json!({"mib_s": 1.0, "p50_ns": 900, "lat_ns": {"p99.9": 5000}});
        for v in [&new, &old] {
            assert_eq!(bandwidth(v), Some(1048576.0));
            assert_eq!(latency(v, "p50"), Some(900.0));
            assert_eq!(latency(v, "p99_9"), Some(5000.0));
        }
    }

    /// Issue 25, item 8: a run over several hosts shows each node's share.
    #[test]
    fn a_run_over_several_hosts_shows_its_nodes() {
        let node = |host: &str, ranks: serde_json::Value| {
            json!({"host": host, "ranks": ranks, "ops": 10, "iops": 5.0, "bw_bytes_s": 1048576.0,
                   "busy_s": 0.5, "bps": 40.0, "device": "vda"})
        };
        let doc = json!({"aggregate": {"iops": 10.0}, "agents": [],
            "per_node": [node("node1", json!([0, 1])), node("node2<b>", json!([2]))]});
        let page = render(&[Source { name: "r.json", doc: &doc }], "t").unwrap();
        assert!(page.contains("Nodes") && page.contains("node1") && page.contains("0,1"), "{page}");
        assert!(page.contains("node2&lt;b&gt;") && !page.contains("node2<b>"), "escaped");
        let one = json!({"aggregate": {"iops": 10.0}, "agents": [], "per_node": [node("node1", json!([0]))]});
        assert!(!render(&[Source { name: "r.json", doc: &one }], "t").unwrap().contains("Nodes"));
    }

    #[test]
    fn the_cdf_comes_from_bins_when_present() {
        let lat = json!({"max": 9000, "bins": [
            {"le_ns": 1000, "count": 0}, {"le_ns": 2000, "count": 3}, {"le_ns": 5000, "count": 1},
            {"le_ns": null, "count": 4}
        ]});
        assert_eq!(latency_cdf(&lat), vec![(2000.0, 0.375), (5000.0, 0.5), (9000.0, 1.0)]);
        let percentiles = json!({"min": 10, "p50": 20, "p99": 40, "max": 90});
        assert_eq!(latency_cdf(&percentiles), vec![(10.0, 0.0), (20.0, 0.5), (40.0, 0.99), (90.0, 1.0)]);
    }

    /// Keys the renderers look for, so that random documents reach deep into every kind.
    const KEYS: &[&str] = &[
        "curves",
        "points",
        "bs",
        "bs_bytes",
        "iops",
        "mib_s",
        "bw_bytes_s",
        "lat_ns",
        "p50",
        "p99",
        "p99_9",
        "max",
        "min",
        "bins",
        "le_ns",
        "count",
        "threads",
        "knee_bs",
        "bw90_bs",
        "modes",
        "mode",
        "write_s",
        "phase_s",
        "b_eff_io",
        "partitions",
        "patterns",
        "types",
        "chunk",
        "mb_s",
        "bytes",
        "time_s",
        "pattern_type",
        "method",
        "ranks",
        "best_ranks",
        "sets",
        "correlations",
        "normalized_cc",
        "name",
        "anova",
        "level_means",
        "significant_interactions",
        "cells",
        "levels",
        "mean",
        "term",
        "choice",
        "recommendations",
        "size_histogram",
        "files",
        "processes",
        "slowest",
        "timeline",
        "pid",
        "rank",
        "start_s",
        "duration_s",
        "op",
        "series",
        "aggregate",
        "agents",
        "per_rank",
        "per_node",
        "host",
        "intervals",
        "end_s",
        "device",
        "samples",
        "t_s",
        "util",
        "interval_s",
        "summary",
        "values",
        "runs",
        "headlines",
        "parts",
        "comparisons",
        "figures",
        "ratio",
        "error",
        "warnings",
        "concurrency",
        "saturation_concurrency",
        "metrics",
        "command",
        "tool",
        "host",
        "suite",
        "util_pct",
        "benchmark",
        "sizes_bytes",
        "results",
        "by_size_bytes_s",
        "protocol",
        "size_bytes",
        "kind",
        "pattern",
        "busy_periods_s",
        "busy_periods_resolution_s",
        "layer",
        "interaction_means",
        "seconds",
        "part",
        "interval_s",
        "read_bw_bytes_s",
        "write_bw_bytes_s",
    ];

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            (-5i64..5000).prop_map(Value::from),
            "[a-z<>&:]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 96, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// Whatever a JSON document holds, the report is a page or an error, never a crash.
        #[test]
        fn any_document_renders_or_is_refused(
            entries in proptest::collection::vec((proptest::sample::select(KEYS), json_value()), 1..6)
        ) {
            let doc = Value::Object(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
            if let Ok(html) = render(&[Source { name: "p.json", doc: &doc }], "t") {
                proptest::prop_assert_eq!(html.matches("<script>").count(), 1);
            }
        }
    }

    #[test]
    fn text_from_results_is_escaped_everywhere() {
        let doc = json!({
            "command": "iolens run <script>alert(1)</script>",
            "aggregate": {"iops": 1.0},
            "agents": [{"name": "<img src=x>", "lat_ns": {"p50": 1}}],
            "warnings": [{"code": "c", "message": "</ul><script>"}]
        });
        let html = render(&[Source { name: "<b>.json", doc: &doc }], "t").unwrap();
        assert!(!html.contains("<script>alert") && !html.contains("<img") && !html.contains("<b>.json"));
        assert_eq!(html.matches("<script>").count(), 1, "only the page's own script");
        assert!(html.contains("default-src 'none'"));
    }
}
