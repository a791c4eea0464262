//! The integration tests of `iolens-workload`, in one test binary: fio job files (`fio`), flags
//! and job files through one builder (`flags_match_files`, a property test), adversarial input
//! (`hostile_input`) and job files with their errors (`jobs`).

#[path = "../../../iolens/tests/integration/util/prerequisite.rs"]
mod prerequisite;

mod fio;
mod flags_match_files;
mod hostile_input;
mod jobs;
