//! Builds the BPF counter sampler shared with ubench, `../bpf/counters.bpf.c`
//! (one source of truth), into a libbpf-rs skeleton, the way CMakeLists.txt
//! does for the C++ harness:
//!
//! 1. `bpftool btf dump file /sys/kernel/btf/vmlinux format c` -> `$OUT_DIR/vmlinux.h`;
//! 2. clang (through libbpf-cargo) compiles the program with `-I$OUT_DIR -I../bpf`;
//! 3. libbpf-cargo writes the skeleton `$OUT_DIR/counters.skel.rs`.
//!
//! Where the kernel BTF, bpftool or clang is missing the crate still builds:
//! the `rbench_bpf` cfg is left unset and `RBENCH_BPF_MISSING` says why, so the
//! `ebpf` module reports the eBPF paths as unavailable with that reason.
//!
//! It also turns the RAPL MSR table, `../kbench/rapl_msrs.h`, and the
//! liveness constants of `../kbench/kbench.h` into Rust (build/rapl_msrs.rs).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/rapl_msrs.rs"]
mod rapl_msrs;

const BPF_SOURCE: &str = "../bpf/counters.bpf.c";
const BPF_HEADER: &str = "../bpf/counters.h";
const DEFAULT_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    rapl_msrs::generate(&out_dir);

    println!("cargo::rustc-check-cfg=cfg(rbench_bpf)");
    println!("cargo::rerun-if-changed={BPF_SOURCE}");
    println!("cargo::rerun-if-changed={BPF_HEADER}");
    println!("cargo::rerun-if-env-changed=RAPLBENCH_BTF");
    // Not rerun-if-env-changed=PATH: a `python3` shim (pyenv) prepends its own
    // directories to PATH, so `make bench-all` (run under results.run_lock)
    // saw another PATH than `make build` and rebuilt rbench and its BPF
    // skeleton every time (~60 s). What the build depends on is the programs
    // PATH resolves to: find_program watches each one it finds, and the
    // directories searched before it (where a new one would take its place).
    // While one is missing, any PATH may find it: then PATH is watched too.
    let clang = find_program("clang", &[]);
    let bpftool = find_program("bpftool", &["/usr/sbin", "/sbin"]);
    if clang.is_none() || bpftool.is_none() {
        println!("cargo::rerun-if-env-changed=PATH");
    }

    let btf = env::var("RAPLBENCH_BTF").unwrap_or_else(|_| DEFAULT_BTF.to_string());
    let missing = if clang.is_none() {
        Some("clang not found".to_string())
    } else if bpftool.is_none() {
        Some("bpftool not found".to_string())
    } else if !Path::new(&btf).exists() {
        Some(format!(
            "{btf} missing (kernel built without CONFIG_DEBUG_INFO_BTF)"
        ))
    } else {
        None
    };
    if let Some(reason) = missing {
        // Same words as ubench's RAPLBENCH_BPF_MISSING.
        println!("cargo::warning=rbench: eBPF paths disabled: {reason}");
        println!("cargo::rustc-env=RBENCH_BPF_MISSING=built without eBPF: {reason}");
        return;
    }

    let (clang, bpftool) = (
        clang.expect("checked above"),
        bpftool.expect("checked above"),
    );
    write_vmlinux_h(&bpftool, &btf, &out_dir.join("vmlinux.h"));

    let bpf_dir = Path::new(BPF_HEADER)
        .parent()
        .expect("header has a directory");
    libbpf_cargo::SkeletonBuilder::new()
        .source(BPF_SOURCE)
        .obj(out_dir.join("counters.bpf.o"))
        .clang(&clang) // the clang found and watched above, not PATH's again
        .clang_args([
            "-I".into(),
            out_dir.clone().into_os_string(),
            "-I".into(),
            bpf_dir.as_os_str().to_owned(),
        ])
        .build_and_generate(out_dir.join("counters.skel.rs"))
        .unwrap_or_else(|e| panic!("compiling {BPF_SOURCE} into a skeleton: {e:#}"));
    println!("cargo::rustc-cfg=rbench_bpf");
}

/// `bpftool btf dump file <btf> format c > <out>`; panics with bpftool's words.
fn write_vmlinux_h(bpftool: &Path, btf: &str, out: &Path) {
    let output = Command::new(bpftool)
        .args(["btf", "dump", "file", btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bpftool.display()));
    if !output.status.success() {
        panic!(
            "{} btf dump file {btf} format c failed: {}",
            bpftool.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::write(out, output.stdout).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}

/// `name` on $PATH, else in one of `extra_dirs` (bpftool lives in /usr/sbin,
/// which is not on every user's PATH). Cargo reruns the build script when
/// the program found changes, or when a directory searched before it changes
/// (one installed there would be found first); when none is found, when any
/// directory searched changes (one installed). Directories that do not exist
/// are not watched: cargo would rerun the script on every build.
fn find_program(name: &str, extra_dirs: &[&str]) -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    for dir in env::split_paths(&path).chain(extra_dirs.iter().map(PathBuf::from)) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            println!("cargo::rerun-if-changed={}", candidate.display());
            return Some(candidate);
        }
        if dir.is_absolute() && dir.is_dir() {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    None
}
