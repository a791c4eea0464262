//! `iolens report … --html`: every kind of result, made by the binary with tiny settings, drawn
//! into one self-contained page that headless Chromium loads without a single console message
//! (script errors, blocked fetches) and paints with more than a blank screen (issue 12,
//! "Pictures"). Without Chromium the page checks still run and the browser part says loudly
//! that it was skipped; `.ci/run` installs Chromium so CI always runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::Env;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Debian's `chromium` (or another name it goes by) on PATH.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    crate::util::require(
        false,
        "chromium on PATH: the HTML reports were NOT checked in a browser (apt-get install chromium)",
    );
    None
}

/// Loads `page` in headless Chromium, screenshots it into `png`, and returns what the browser
/// logged from the page's console (every console message, script error and blocked fetch).
fn load_in_chromium(browser: &Path, env: &Env, page: &Path, png: &Path) -> Vec<String> {
    let profile = tempfile::tempdir_in(env.dir.path()).unwrap();
    let mut child = Command::new(browser)
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1200,900"])
        .arg(format!("--user-data-dir={}", s(profile.path())))
        .arg(format!("--screenshot={}", s(png)))
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("file://{}", s(page)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish with {} in 120 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = reader.join().unwrap();
    assert!(png.is_file(), "chromium wrote no screenshot of {}:\n{log}", page.display());
    log.lines().filter(|l| l.contains(":CONSOLE")).map(str::to_string).collect()
}

/// Distinct colours and the variance of the luminance of a screenshot.
fn pixel_spread(png: &Path) -> (usize, f64) {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "a colour screenshot: {:?}", info.color_type);
    let pixels = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for px in pixels.chunks_exact(channels) {
        colours.insert((px[0], px[1], px[2]));
        let y = 0.299 * px[0] as f64 + 0.587 * px[1] as f64 + 0.114 * px[2] as f64;
        sum += y;
        sum_sq += y * y;
        n += 1.0;
    }
    let mean = sum / n;
    (colours.len(), sum_sq / n - mean * mean)
}

/// Runs iolens; the command must succeed.
fn iolens_ok(env: &Env, args: &[&str]) {
    let out = env.iolens().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "iolens {args:?}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this iolens records per-interval series (`run --log-interval`), which the page draws.
fn logs_intervals(env: &Env) -> bool {
    let help = env.iolens().args(["run", "--help"]).output().unwrap();
    String::from_utf8_lossy(&help.stdout).contains("--log-interval")
}

/// One result of every kind `iolens report` draws, each made by the binary with tiny settings.
fn make_results(env: &Env) -> Vec<(&'static str, PathBuf)> {
    let data = env.mkdir("data");
    let d = s(&data);
    let json = |name: &str| env.path(&format!("{name}.json"));
    let mut results = Vec::new();
    let mut add = |kind: &'static str, args: &[&str], file: PathBuf| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--json", s(&file)]);
        iolens_ok(env, &all);
        results.push((kind, file));
    };
    let mut run = vec!["run", "--target", d, "--rw", "randrw", "--size", "1m", "--threads", "2"];
    run.extend(["--time", "300ms", "-q"]);
    if logs_intervals(env) {
        run.extend(["--log-interval", "100ms"]);
    }
    add("run", &run, json("run"));
    let repeat = ["run", "--target", d, "--size", "1m", "--time", "100ms", "--repeat", "2", "-q"];
    add("run --repeat", &repeat, json("repeat"));
    let sweep = ["sweep", d, "--threads", "1,2", "--time", "50ms", "--size", "1m", "--max-bs", "16k", "-q"];
    add("sweep", &[&sweep[..], &["--min-bs", "4k"]].concat(), json("sweep"));
    let saturate = ["saturate", d, "--time", "50ms", "--size", "1m", "--max-concurrency", "4", "-q"];
    add("saturate", &saturate, json("saturate"));
    add("write-modes", &["write-modes", d, "--bytes", "256k", "-q"], json("write-modes"));
    let beff = ["beff-io", d, "--time", "1s", "--mpart", "256k", "--ranks", "1", "--memory", "16m", "-q"];
    add("beff-io", &beff, json("beff-io"));
    add(
        "validate",
        &["validate", d, "--volume", "1m", "--repeat", "2", "--sets", "1,2", "-q"],
        json("validate"),
    );

    let csv = env.path("metrics.csv");
    std::fs::write(&csv, "time_s,iops,bw,arpt\n10,100,5,1.0\n8,120,6,0.8\n6,150,9,0.7\n4,190,8,0.5\n")
        .unwrap();
    add("correlate", &["correlate", s(&csv), "--time", "time_s"], json("correlate"));

    let plan = env.path("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[defaults]\ntarget = \"{d}\"\nrw = \"randread\"\nengine = \"null\"\nsize = \"1m\"\ntime = \"50ms\"\n\
             [[agent]]\nname = \"a\"\n[doe]\nreplicates = 2\nseed = 3\nfactors = {{ bs = [\"4k\", \"16k\"], threads = [1, 2] }}\n"
        ),
    )
    .unwrap();
    let study = env.path("study.csv");
    iolens_ok(env, &["doe", s(&plan), "--out", s(&study), "-q"]);
    let doe = ["doe", "analyze", s(&study), "--response", "bw_bytes_s", "--factors", "bs,threads"];
    add("doe analyze", &doe, json("doe"));

    let streams = env.path("streams");
    let traced = data.join("traced.txt");
    let script =
        format!("for i in 1 2 3; do echo some-data-$i >> {0}; done; cat {0} > /dev/null", s(&traced));
    let trace_json = json("trace");
    iolens_ok(env, &["trace", "--out", s(&streams), "--json", s(&trace_json), "--", "sh", "-c", &script]);
    add("analyze", &["analyze", s(&streams)], json("analyze"));
    let (run_json, repeat_json) = (json("run"), json("repeat"));
    add("compare", &["compare", s(&run_json), s(&repeat_json)], json("compare"));
    results.push(("trace", trace_json));
    results.push(("beff", beff_result(env)));

    // A failed command's error document is a result too.
    let failed = json("failed");
    let out =
        env.iolens().args(["run", "--target", d, "--bs", "nonsense", "--json", s(&failed)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    results.push(("failed command", failed));
    results
}

/// `iolens beff` under `mpirun -np 2 --quick`, with an iolens built with MPI.
#[cfg(feature = "mpi")]
fn beff_result(env: &Env) -> PathBuf {
    let file = env.path("beff.json");
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2", env!("CARGO_BIN_EXE_iolens")])
        .args(["beff", "--quick", "-q", "--json", s(&file)])
        .env("IOLENS_STATE_DIR", &env.state)
        .stdin(Stdio::null())
        .output()
        .expect("mpirun (install openmpi-bin)");
    assert!(out.status.success(), "mpirun iolens beff: {}", String::from_utf8_lossy(&out.stderr));
    file
}

/// Without MPI `iolens beff` cannot measure: the b_eff JSON is made the way `iolens beff` makes
/// it, by iolens-mpi's own reduction (per-pattern results and Table 1's columns) over a protocol
/// of every pattern, size, method and repetition, with bandwidths from a latency-plus-bandwidth
/// model of a network instead of measurements.
#[cfg(not(feature = "mpi"))]
fn beff_result(env: &Env) -> PathBuf {
    use iolens_suites::beff::{
        message_sizes, pattern_results, patterns, summarize, BeffOutput, Measurement, FORMULA, METHODS, REPS,
    };
    let (processes, lmax) = (4, 64 << 10);
    let sizes = message_sizes(lmax);
    let patterns = patterns(processes, 1);
    let mut protocol = Vec::new();
    for p in &patterns {
        for &size in &sizes {
            for (m, &method) in METHODS.iter().enumerate() {
                for rep in 0..REPS {
                    let latency_s = 2e-6 * (1.0 + m as f64 * 0.3) * (1.0 + p.number as f64 * 0.1);
                    let time_s = 100.0 * (latency_s + size as f64 / 2e9) * (1.0 + rep as f64 * 0.05);
                    let messages = p.messages();
                    let bandwidth = iolens_suites::beff::bandwidth(size, messages, 100, time_s);
                    let (pattern, kind) = (p.name.clone(), p.kind);
                    protocol.push(Measurement {
                        pattern,
                        kind,
                        size,
                        method,
                        rep,
                        loops: 100,
                        time_s,
                        messages,
                        bandwidth,
                    });
                }
            }
        }
    }
    let results = pattern_results(&patterns, &sizes, &protocol);
    let summary = summarize(&results, processes, lmax, None);
    let out = BeffOutput {
        benchmark: "b_eff".into(),
        mpi_library: "none (modelled network: this iolens has no MPI)".into(),
        units: "bytes/s".into(),
        formula: FORMULA.into(),
        summary,
        sizes,
        patterns,
        results,
        ping_pong: Vec::new(),
        protocol,
    };
    let file = env.path("beff.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&out).unwrap()).unwrap();
    file
}

/// A page that fetches nothing: no scheme other than the SVG namespace, no `src=`, and links
/// only to its own sections.
fn assert_self_contained(html: &str, what: &str) {
    let without_namespace = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http:", "https:", "//cdn", "src=", "@import", "url("] {
        assert!(!without_namespace.contains(needle), "{what}: the page refers to {needle}");
    }
    for href in without_namespace.split("href=\"").skip(1) {
        assert!(href.starts_with('#'), "{what}: a link out of the page: {}", &href[..href.len().min(60)]);
    }
    assert!(html.contains("default-src 'none'"), "{what}: a Content-Security-Policy forbidding fetches");
}

#[test]
fn every_result_kind_renders_in_headless_chromium() {
    let env = Env::new();
    let mut pages = Vec::new();
    for (kind, result) in make_results(&env) {
        let page = result.with_extension("html");
        iolens_ok(&env, &["report", s(&result), "--html", s(&page)]);
        let html = std::fs::read_to_string(&page).unwrap();
        assert_self_contained(&html, kind);
        assert!(html.contains(&format!("<small>{kind}")) || kind == "analyze" || kind == "trace", "{kind}");
        if kind == "run" && logs_intervals(&env) {
            assert!(html.contains("IOPS per interval"), "the run's series are drawn");
        }
        if kind == "analyze" || kind == "trace" {
            assert!(html.contains("I/O timeline per process"), "{kind}: a lane per process");
            assert!(html.contains(" busy from "), "{kind}: the lanes show the processes' busy periods");
        }
        if kind == "doe analyze" {
            assert!(html.contains("Interaction bs:threads (p = "), "every two-factor interaction is plotted");
        }
        if kind == "beff" {
            assert!(html.contains("Bandwidth vs message size per pattern"), "b_eff per pattern and size");
        }
        if kind != "failed command" {
            assert!(html.contains("<svg") || html.contains("<table"), "{kind}: drawn");
            assert!(!html.contains("no data to plot"), "{kind}: every chart finds its data");
        } else {
            assert!(html.contains("class=\"error\""), "the error is shown");
        }
        pages.push((kind, page));
    }
    // quick writes its own page beside the parts' results.
    let quick_dir = env.mkdir("quick");
    let quick_results = env.path("quick-results");
    iolens_ok(
        &env,
        &["quick", s(&quick_dir), "--time", "100ms", "--size", "4m", "-q", "--results", s(&quick_results)],
    );
    let quick_page = quick_results.join("report.html");
    let html = std::fs::read_to_string(&quick_page).expect("quick writes report.html");
    assert_self_contained(&html, "quick");
    for part in ["quick.json", "sweep.json", "saturate.json", "write-modes.json", "beff-io.json"] {
        assert!(html.contains(&format!("<h2>{part} ")), "quick's page has {part}");
    }
    assert!(html.contains("Time per part"), "quick's own section has a chart too");
    pages.push(("quick", quick_page));

    let Some(browser) = chromium() else { return };
    for (kind, page) in pages {
        let png = page.with_extension("png");
        let console = load_in_chromium(&browser, &env, &page, &png);
        assert!(console.is_empty(), "{kind}: console messages:\n{}", console.join("\n"));
        let (colours, variance) = pixel_spread(&png);
        assert!(
            colours >= 16 && variance > 100.0,
            "{kind}: a blank screenshot ({colours} colours, variance {variance})"
        );
    }
}

#[test]
fn the_browser_check_catches_script_errors_and_blocked_fetches() {
    let Some(browser) = chromium() else { return };
    let env = Env::new();
    let page = env.path("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'unsafe-inline'\"></head><body>\
         <script>fetch('http://192.0.2.1/x.json').catch(function(){});missingFunction();</script></body></html>",
    )
    .unwrap();
    let png = env.path("broken.png");
    let console = load_in_chromium(&browser, &env, &page, &png);
    assert!(console.iter().any(|l| l.contains("missingFunction")), "{console:?}");
    assert!(console.iter().any(|l| l.contains("Content Security Policy")), "{console:?}");
    let (colours, _) = pixel_spread(&png);
    assert!(colours < 16, "an empty page is what blank looks like: {colours} colours");
}

#[test]
fn results_that_are_not_iolens_json_are_refused_naming_the_file() {
    let env = Env::new();
    let not_json = env.path("notes.txt");
    std::fs::write(&not_json, "time,iops\n1,2\n").unwrap();
    let unknown = env.path("other.json");
    std::fs::write(&unknown, "{\"hello\": 1}").unwrap();
    let missing = env.path("missing.json");
    let out_page = env.path("out.html");
    for (file, says) in [
        (&not_json, "line 1 column 2: not valid JSON"),
        (&unknown, "not an iolens result"),
        (&missing, "cannot open"),
    ] {
        let out = env.iolens().args(["report", s(file), "--html", s(&out_page)]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("{}: {says}", file.display())), "{stderr}");
        assert!(!out_page.exists(), "no page from bad input");
    }
    // A FIFO is read like a file, not waited on forever: its writer's bytes are the result.
    let fifo = env.path("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, "[1, 2]").unwrap())
    };
    let out = env.iolens().args(["report", s(&fifo), "--html", s(&out_page)]).output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a JSON object"));
}
