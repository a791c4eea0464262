//! Variadic C functions (fprintf, execl*) cannot be defined in stable Rust: a small C shim
//! defines them and calls back into the Rust recorder.
fn main() {
    println!("cargo:rerun-if-changed=src/variadic.c");
    cc::Build::new()
        .file("src/variadic.c")
        .flag_if_supported("-fvisibility=default")
        .compile("iolens_variadic");
}
