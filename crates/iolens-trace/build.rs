//! Builds `libiolens_preload.so` and hands its path to the compiler, so that `iolens trace`
//! carries the library inside the binary (`cargo install` installs binaries only).
//!
//! Cargo cannot depend on a cdylib artifact on stable, so this runs a nested cargo on the
//! preload crate, into a target directory of its own under OUT_DIR (sharing the outer one
//! would deadlock on its lock). The nested build is incremental: after the first build it only
//! checks that the preload's sources are unchanged.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    embed_preload();
}

fn embed_preload() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let crates = manifest_dir.parent().expect("crates/iolens-trace sits in crates/");
    let preload_manifest = crates.join("iolens-preload").join("Cargo.toml");
    for watched in [
        "iolens-preload/src",
        "iolens-preload/build.rs",
        "iolens-preload/Cargo.toml",
        "iolens-record/src",
        "iolens-record/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", crates.join(watched).display());
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target_dir = out_dir.join("preload-target");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let host = std::env::var("HOST").expect("cargo sets HOST");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    let mut build = Command::new(cargo);
    build.arg("build").arg("--manifest-path").arg(&preload_manifest).arg("--target-dir").arg(&target_dir);
    if release {
        build.arg("--release");
    }
    if target != host {
        build.args(["--target", &target]);
    }
    // The workspace's Cargo.lock already pins the preload's dependencies: never rewrite it.
    build.arg("--locked");
    // What the outer cargo set for this build script is not the preload's business: lint
    // drivers (clippy) and the outer crate's rustflags (sanitizers of a fuzz build would be
    // loaded into every traced program).
    for variable in ["RUSTC_WORKSPACE_WRAPPER", "CLIPPY_ARGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR"]
    {
        build.env_remove(variable);
    }
    let status = build.status().expect("cannot run cargo to build the preload library");
    assert!(status.success(), "building libiolens_preload.so failed (see the errors above)");

    let mut library = target_dir;
    if target != host {
        library.push(&target);
    }
    library.push(if release { "release" } else { "debug" });
    library.push("libiolens_preload.so");
    assert!(library.exists(), "the nested build made no {}", library.display());
    println!("cargo:rustc-env=IOLENS_PRELOAD_EMBEDDED={}", library.display());
}
