//! Find llmgen the way `pkg-config --cflags` / `pkg-config --libs --static llmgen` say
//! (PKG_CONFIG_PATH: `make rust-client` points it at an llmgen.pc for this tree; an
//! installed llmgen works too), link libllmgen.a, and compile and run layout.c against the
//! header it names: its output is what tests/layout.rs compares the declarations with.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config(args: &[&str]) -> Vec<String> {
    let exe = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&exe).args(args).arg("llmgen").output().unwrap_or_else(|e| panic!("{exe}: {e}"));
    if !out.status.success() {
        panic!(
            "`{exe} {} llmgen` failed: {}\nmake rust-client writes build/pkgconfig/llmgen.pc for this tree; \
             or `make install` and set PKG_CONFIG_PATH to its lib/pkgconfig",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(String::from).collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=layout.c");

    let cflags = pkg_config(&["--cflags"]);
    let header = cflags
        .iter()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(|d| Path::new(d).join("llmgen.h"))
        .chain(std::iter::once(PathBuf::from("/usr/include/llmgen.h")))
        .find(|h| h.exists())
        .expect("llmgen.h is in none of pkg-config's include directories");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rustc-env=LLMGEN_HEADER={}", header.display());

    // --static: libllmgen.a and the libraries it needs (Libs.private)
    for flag in pkg_config(&["--libs", "--static"]) {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            let lib = Path::new(dir).join("libllmgen.a");
            if lib.exists() {
                println!("cargo:rerun-if-changed={}", lib.display());
            }
        } else if flag == "-lllmgen" {
            println!("cargo:rustc-link-lib=static=llmgen");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        } else {
            println!("cargo:rustc-link-arg={flag}");
        }
    }

    // the C compiler's view of the header
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let exe = out.join("layout");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .args(&cflags)
        .arg("-o")
        .arg(&exe)
        .arg("layout.c")
        .status()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(st.success(), "{cc} could not compile layout.c against {}", header.display());
    let facts = Command::new(&exe).output().expect("run layout");
    assert!(facts.status.success(), "layout exited with {}", facts.status);
    std::fs::write(out.join("layout.txt"), facts.stdout).unwrap();
    println!("cargo:rustc-env=LLMGEN_LAYOUT={}", out.join("layout.txt").display());
}
