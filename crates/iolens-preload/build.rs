//! Variadic C functions (fprintf, printf, scanf, dprintf, execl, …) cannot be defined in stable Rust: a small C shim
//! defines them and calls back into the Rust recorder. Per-thread state lives in C too
//! (thread_state.c), for its initial-exec TLS model.
//!
//! Nothing in Rust calls the shim, so it is linked whole (an archive member nobody references
//! is left out), and its hooks are exported through a version script of their own (rustc's
//! script exports Rust items only, and hides the rest).
fn main() {
    println!("cargo:rerun-if-changed=src/variadic.c");
    println!("cargo:rerun-if-changed=src/thread_state.c");
    println!("cargo:rerun-if-changed=src/scanf.c");
    cc::Build::new()
        .file("src/variadic.c")
        .file("src/thread_state.c")
        .file("src/scanf.c")
        .flag_if_supported("-fvisibility=default")
        .link_lib_modifier("+whole-archive")
        .compile("iolens_variadic");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let map = std::path::Path::new(&out).join("c_hooks.map");
    let globals: String = C_HOOKS.iter().map(|s| format!(" {s};")).collect();
    std::fs::write(&map, format!("{{\n  global:{globals}\n}};\n")).expect("OUT_DIR is writable");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
}

/// The functions variadic.c defines, which the traced program must find in place of libc's.
const C_HOOKS: &[&str] = &[
    "fprintf",
    "__fprintf_chk",
    "printf",
    "__printf_chk",
    "vfprintf",
    "__vfprintf_chk",
    "vprintf",
    "__vprintf_chk",
    "vfscanf",
    "__isoc99_vfscanf",
    "vscanf",
    "__isoc99_vscanf",
    "fscanf",
    "__isoc99_fscanf",
    "scanf",
    "__isoc99_scanf",
    "vfwscanf",
    "__isoc99_vfwscanf",
    "vwscanf",
    "__isoc99_vwscanf",
    "fwscanf",
    "__isoc99_fwscanf",
    "wscanf",
    "__isoc99_wscanf",
    "vfwprintf",
    "__vfwprintf_chk",
    "vwprintf",
    "__vwprintf_chk",
    "fwprintf",
    "__fwprintf_chk",
    "wprintf",
    "__wprintf_chk",
    "vdprintf",
    "__vdprintf_chk",
    "dprintf",
    "__dprintf_chk",
    "execl",
    "execlp",
    "execle",
];
