//! The JSON that rank 0 writes under MPI conforms to its schema in `schemas/`.

use super::*;

/// `doc` fits `schema` in `schemas/`, by the validator of the contract test (tests/contract.rs).
fn conforms(schema: &str, doc: &Value) {
    let mut schemas =
        schema_check::Schemas::new(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas"));
    let errors = schemas.validate(schema, doc);
    assert!(errors.is_empty(), "{schema}:\n{}\n{doc:#}", errors.join("\n"));
    floats_check::cpu_figures_are_floats(doc, schema);
}

#[test]
fn the_json_of_run_sweep_beff_io_and_beff_under_mpi_conforms_to_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let json = |name: &str| dir.path().join(format!("{name}.json")).to_str().unwrap().to_string();
    mpirun(&["run", "--target", &d, "--size", "1m", "--time", "200ms", "-q", "--json", &json("run")]);
    let run = read_json(Path::new(&json("run")));
    conforms("run.schema.json", &run);
    assert_eq!(u(&run["ranks"]), RANKS as u64, "the combined result: {run}");

    mpirun(&[
        "sweep",
        &d,
        "--buffered",
        "--threads",
        "1",
        "--min-bs",
        "4k",
        "--max-bs",
        "8k",
        "--size",
        "1m",
        "--time",
        "100ms",
        "-q",
        "--json",
        &json("sweep"),
    ]);
    let sweep = read_json(Path::new(&json("sweep")));
    conforms("sweep.schema.json", &sweep);
    assert_eq!(sweep["job"]["suite"], "sweep");

    let target = dir.path().join("beff-io");
    std::fs::create_dir(&target).unwrap();
    let pq = dir.path().join("beff-io.parquet").to_str().unwrap().to_string();
    mpirun(&[
        "beff-io",
        target.to_str().unwrap(),
        "--time",
        "400ms",
        "--mpart",
        "1m",
        "--memory",
        "16m",
        "--hint",
        "cb_nodes=2",
        "-q",
        "--json",
        &json("beff-io"),
        "--parquet",
        &pq,
    ]);
    let beff_io = read_json(Path::new(&json("beff-io")));
    conforms("beff-io.schema.json", &beff_io);
    assert_eq!(beff_io["job"]["hints"], serde_json::json!(["cb_nodes=2"]));
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let patterns: usize = beff_io["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["patterns"].as_array().unwrap().len())
        .sum();
    assert_eq!(reader.metadata().file_metadata().num_rows() as usize, patterns);
    let kv = reader.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
    let envelope = kv.iter().find(|k| k.key == "iolens.envelope").and_then(|k| k.value.clone()).unwrap();
    let envelope: Value = serde_json::from_str(&envelope).unwrap();
    assert_eq!(envelope["job"], beff_io["job"], "rank 0's Parquet carries the same job");

    mpirun(&["beff", "--quick", "-q", "--json", &json("beff")]);
    conforms("beff.schema.json", &read_json(Path::new(&json("beff"))));
}
