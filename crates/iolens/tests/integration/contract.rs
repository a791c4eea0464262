//! The output contract: every command's `--json`, run with tiny settings, validates against
//! its schema in `schemas/`, starts with the one envelope, and uses one key per figure (no
//! dotted keys, none of the retired unit variants). MPI-only commands (beff) are not run here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::floats_check;
use crate::util::schema_check;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn schemas() -> schema_check::Schemas {
    schema_check::Schemas::new(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas"))
}

/// Keys of schema 1 that named one figure several ways; none may come back.
const RETIRED: &[&str] =
    &["mib_s", "mbit_s", "mb_s", "p50_ns", "p99_ns", "rmb_s", "wmb_s", "tool_version", "util_pct"];

/// Every key of `v`, with where it is, for the checks that hold everywhere.
fn keys(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                out.push((k.clone(), at.to_string()));
                keys(x, &format!("{at}.{k}"), out);
            }
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| keys(x, &format!("{at}[{i}]"), out)),
        _ => {}
    }
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        Env { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn data(&self) -> String {
        self.path("d").display().to_string()
    }

    /// Runs a command with `--json NAME.json`; its exit status must be `code`.
    fn json(&self, name: &str, args: &[&str], code: i32) -> Value {
        let json = self.path(&format!("{name}.json"));
        let out = iolens().args(args).arg("--json").arg(&json).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    }
}

fn conforms(schema: &str, doc: &Value, argv_tail: &[&str]) {
    let errors = schemas().validate(schema, doc);
    assert!(errors.is_empty(), "{schema}:\n{}\n{doc:#}", errors.join("\n"));
    let mut all = Vec::new();
    keys(doc, "$", &mut all);
    for (k, at) in &all {
        assert!(!k.contains('.'), "{schema}: key {k:?} at {at} holds a dot");
        assert!(!RETIRED.contains(&k.as_str()), "{schema}: retired key {k:?} at {at}");
    }
    floats_check::cpu_figures_are_floats(doc, schema);
    let command: Vec<&str> = doc["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(
        command.ends_with(argv_tail) || command.windows(argv_tail.len()).any(|w| w == argv_tail),
        "{command:?}"
    );
    assert!(doc["started_at"].as_str().unwrap() <= doc["ended_at"].as_str().unwrap());
}

/// What a CSV field holds: a whole number, a float (always with a point or an exponent), or text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell {
    Whole,
    Float,
    Text,
}

fn cell(field: &str) -> Cell {
    if field.parse::<i64>().is_ok() || field.parse::<u64>().is_ok() {
        Cell::Whole
    } else if field.parse::<f64>().is_ok() {
        Cell::Float
    } else {
        Cell::Text
    }
}

/// A CSV of one row shape: a header starting with `row_kind`, every row as wide as the header,
/// a `row_kind` in every row, and one kind of value per column (a float column never holds a
/// bare `2`); `columns` names the kind some columns must have. Quoted fields are not expected.
fn typed_csv(path: &Path, columns: &[(&str, Cell)]) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "row_kind", "{}: {header:?}", path.display());
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "{}: no rows", path.display());
    for (k, name) in header.iter().enumerate() {
        let mut kinds: Vec<Cell> = rows
            .iter()
            .map(|r| {
                assert_eq!(r.len(), header.len(), "{}: {r:?}", path.display());
                r[k]
            })
            .filter(|f| !f.is_empty())
            .map(cell)
            .collect();
        kinds.dedup();
        assert!(kinds.len() <= 1, "{}: column {name} mixes {kinds:?}", path.display());
        if let Some((_, want)) = columns.iter().find(|(c, _)| c == name) {
            assert_eq!(kinds, [*want], "{}: column {name}", path.display());
        }
    }
    assert!(rows.iter().all(|r| !r[0].is_empty()), "{}: a row without row_kind", path.display());
    for (name, _) in columns {
        assert!(header.contains(name), "{}: no column {name}", path.display());
    }
}

/// The codes of a document's envelope warnings.
/// Asserts that `doc` with the value at `pointer` replaced by `wrong` breaks `schema`, naming
/// the key: a schema that only lists a key, without its type, would let it pass.
fn refused(schema: &str, doc: &Value, pointer: &str, wrong: Value) {
    let mut broken = doc.clone();
    *broken.pointer_mut(pointer).unwrap_or_else(|| panic!("{schema}: no {pointer} in {doc:#}")) = wrong;
    let key = pointer.rsplit('/').find(|part| part.parse::<usize>().is_err()).unwrap_or(pointer);
    let errors = schemas().validate(schema, &broken);
    assert!(errors.iter().any(|e| e.contains(key)), "{schema}: a wrong {pointer} passed: {errors:?}");
}

fn warning_codes(doc: &Value) -> Vec<&str> {
    doc["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect()
}

#[test]
fn the_schemas_refuse_what_breaks_them() {
    let env = Env::new();
    let good = env.json("run", &["run", "--target", &env.data(), "--size", "1m", "--time", "100ms", "-q"], 0);
    conforms("run.schema.json", &good, &["run"]);
    let mut s = schemas();
    let mut broken = good.clone();
    broken["aggregate"]["lat_ns"]["p99"] = serde_json::json!(12.5);
    assert!(
        s.validate("run.schema.json", &broken).iter().any(|e| e.contains("lat_ns.p99")),
        "a float latency"
    );
    let mut broken = good.clone();
    broken.as_object_mut().unwrap().remove("host");
    assert!(!s.validate("run.schema.json", &broken).is_empty(), "no host");
    let mut broken = good;
    broken["warnings"] = serde_json::json!(["short_run"]);
    assert!(!s.validate("run.schema.json", &broken).is_empty(), "warnings as bare codes");
}

#[test]
fn every_command_writes_its_schema() {
    let env = Env::new();
    let d = env.data();
    let small = ["--size", "1m", "--time", "100ms", "-q"];

    let run = env.json(
        "run",
        &[
            &["run", "--target", &d, "--rw", "randrw", "--trace"],
            &[env.path("t.trace").to_str().unwrap()][..],
            &small[..],
        ]
        .concat(),
        0,
    );
    conforms("run.schema.json", &run, &["run"]);
    assert_eq!(run["job"]["agents"][0]["rw"], "mixed", "the resolved job is in the envelope");
    let repeat = env.json("repeat", &[&["run", "--target", &d, "--repeat", "2"][..], &small[..]].concat(), 0);
    conforms("run.schema.json", &repeat, &["--repeat", "2"]);

    suites_write_their_schemas(&env, &d, &small);

    let metrics = env.path("m.csv");
    std::fs::write(&metrics, "time_s,iops,bw,arpt\n10,100,5,1.0\n8,120,6,0.8\n6,150,9,0.7\n4,190,8,0.5\n")
        .unwrap();
    let correlate = env.json("correlate", &["correlate", metrics.to_str().unwrap(), "--time", "time_s"], 0);
    conforms("correlate.schema.json", &correlate, &["correlate"]);

    doe_writes_its_schema(&env, &d);

    analyze_writes_its_schema(&env);

    let first = env.path("run.json");
    let compare = env.json("compare", &["compare", first.to_str().unwrap(), first.to_str().unwrap()], 0);
    conforms("compare.schema.json", &compare, &["compare"]);

    let monitor = env.json("monitor", &["monitor", "--count", "1", "--interval", "100ms"], 0);
    conforms("monitor.schema.json", &monitor, &["monitor"]);

    quick_writes_its_schema(&env, &d);

    let error = env.json("error", &["run", "--no-such-flag"], 2);
    conforms("error.schema.json", &error, &["--no-such-flag"]);
    assert_eq!(error["error"]["code"], "bad_input");
    let failed = env.json("failed", &["run", "--target", &d, "--rw", "sideways", "-q"], 2);
    conforms("error.schema.json", &failed, &["sideways", "-q"]);
}

/// The suites' documents (sweep, saturate, write-modes, beff-io, validate), with the points'
/// warnings and the suite's job in the envelope.
fn suites_write_their_schemas(env: &Env, d: &str, small: &[&str]) {
    let sweep =
        env.json("sweep", &[&["sweep", d, "--min-bs", "4k", "--max-bs", "8k"][..], small].concat(), 0);
    conforms("sweep.schema.json", &sweep, &["sweep"]);
    let codes = warning_codes(&sweep);
    assert!(codes.contains(&"short_run"), "the points' warnings reach the envelope: {codes:?}");
    let short = sweep["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "short_run").unwrap();
    assert!(
        short["message"].as_str().is_some_and(|m| m.contains(" threads, 4") && m.contains(": run lasted ")),
        "the point's own message, named by the point: {short}"
    );
    assert_eq!(sweep["job"]["suite"], "sweep");
    assert_eq!(sweep["job"]["min_bs_bytes"], 4096, "the suite's job is in the envelope");
    assert_eq!(sweep["job"]["time_per_point_s"], 0.1);
    let saturate = env.json("saturate", &[&["saturate", d, "--max-concurrency", "2"][..], small].concat(), 0);
    conforms("saturate.schema.json", &saturate, &["saturate"]);
    assert!(warning_codes(&saturate).contains(&"short_run"), "{:?}", warning_codes(&saturate));
    assert_eq!(saturate["job"]["max_concurrency"], 2);
    let modes = env.json("write-modes", &["write-modes", d, "--bytes", "1m", "--threads", "1", "-q"], 0);
    conforms("write-modes.schema.json", &modes, &["write-modes"]);
    assert_eq!(modes["job"]["bytes_per_mode"], 1 << 20);
    let beff_io = env.json(
        "beff-io",
        &["beff-io", d, "--time", "200ms", "--mpart", "1m", "--ranks", "1", "--memory", "16m", "-q"],
        0,
    );
    conforms("beff-io.schema.json", &beff_io, &["beff-io"]);
    assert_eq!(beff_io["job"]["mpart_bytes"], 1 << 20);
    let validate = env.json("validate", &["validate", d, "--volume", "1m", "--repeat", "2", "-q"], 0);
    conforms("validate.schema.json", &validate, &["validate"]);
    assert!(warning_codes(&validate).contains(&"short_run"), "{:?}", warning_codes(&validate));
    assert_eq!(validate["job"]["volume_bytes"], 1 << 20);
}

/// `doe` runs a plan and `doe analyze` reads its data back: the analysis and the data CSV.
fn doe_writes_its_schema(env: &Env, d: &str) {
    let plan = env.path("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[defaults]\ntarget = \"{d}\"\nrw = \"randread\"\nengine = \"null\"\nsize = \"1m\"\ntime = \"100ms\"\n\
             [[agent]]\nname = \"a\"\n[doe]\nreplicates = 2\nseed = 9\nfactors = {{ bs = [\"4k\", \"16k\"], threads = [1, 2] }}\n"
        ),
    )
    .unwrap();
    let data = env.path("doe.csv");
    let out = iolens().arg("doe").arg(&plan).arg("--out").arg(&data).arg("-q").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doe = env.json(
        "doe",
        &["doe", "analyze", data.to_str().unwrap(), "--response", "iops", "--factors", "bs,threads"],
        0,
    );
    conforms("doe.schema.json", &doe, &["analyze"]);
    refused("doe.schema.json", &doe, "/interaction_means/0/term", serde_json::json!(["bs", "threads"]));
    refused("doe.schema.json", &doe, "/interaction_means/0/cells/0/mean", serde_json::json!("1.5"));
    refused("doe.schema.json", &doe, "/interaction_means/0/cells/0/levels", serde_json::json!("4k"));
    typed_csv(
        &data,
        &[
            ("run_id", Cell::Whole),
            ("ops", Cell::Whole),
            ("iops", Cell::Float),
            ("cpu_per_op_ns", Cell::Float),
            ("lat_p99_ns", Cell::Whole),
        ],
    );
    assert_eq!(doe["job"]["factors"], serde_json::json!(["bs", "threads"]));
}

/// `analyze` of the trace the run of [`every_command_writes_its_schema`] wrote, and its CSV.
fn analyze_writes_its_schema(env: &Env) {
    let analyze = env.json("analyze", &["analyze", env.path("t.trace").to_str().unwrap()], 0);
    conforms("analyze.schema.json", &analyze, &["analyze"]);
    refused("analyze.schema.json", &analyze, "/processes/0/busy_periods_s", serde_json::json!("0-1"));
    refused("analyze.schema.json", &analyze, "/processes/0/busy_periods_s/0", serde_json::json!(0.5));
    refused(
        "analyze.schema.json",
        &analyze,
        "/processes/0/busy_periods_resolution_s",
        serde_json::json!("1ns"),
    );
    let ops = env.path("ops.csv");
    let out = iolens().arg("analyze").arg(env.path("t.trace")).arg("--csv").arg(&ops).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    typed_csv(
        &ops,
        &[
            ("pid", Cell::Whole),
            ("path", Cell::Text),
            ("requested", Cell::Whole),
            ("duration_ns", Cell::Whole),
        ],
    );
}

/// `quick` and each of its parts' documents; `--csv` is refused.
fn quick_writes_its_schema(env: &Env, d: &str) {
    let results = env.path("results");
    let quick = env.json(
        "quick",
        &["quick", d, "--time", "100ms", "--size", "4m", "-q", "--results", results.to_str().unwrap()],
        0,
    );
    conforms("quick.schema.json", &quick, &["quick"]);
    let parts: Vec<&str> =
        quick["job"]["parts"].as_array().unwrap().iter().map(|j| j["suite"].as_str().unwrap()).collect();
    assert_eq!(parts, ["sweep", "saturate", "write-modes", "beff-io"]);
    let modes_job = &quick["job"]["parts"][2];
    assert_eq!(modes_job["bytes_per_mode"], 4 << 20);
    assert!(modes_job["region_per_thread_bytes"].is_u64(), "resolved from the run: {modes_job}");
    for (part, schema) in
        [("sweep", "sweep"), ("saturate", "saturate"), ("write-modes", "write-modes"), ("beff-io", "beff-io")]
    {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(results.join(format!("{part}.json"))).unwrap())
                .unwrap();
        conforms(&format!("{schema}.schema.json"), &v, &["quick"]);
    }

    let no_csv = env.json("no-csv", &["quick", d, "--csv", env.path("q.csv").to_str().unwrap()], 2);
    assert!(
        no_csv["error"]["message"].as_str().unwrap().starts_with("--csv: quick writes no CSV"),
        "{no_csv}"
    );
    assert!(!env.path("q.csv").exists());
}
