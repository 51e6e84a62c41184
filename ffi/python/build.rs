//! Builds the CUDA kernels and loader (ffi/cuda) into a shared library that the extension
//! carries (for `device="cuda"`), when an nvcc is found: `ENEC_NVCC`, else `$CUDA_HOME/bin/nvcc`,
//! else `nvcc` on the PATH. Without one the package decodes on the CPU only. The library links
//! the CUDA runtime statically, so a user needs the NVIDIA driver and nothing else.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_nvcc() -> Option<(PathBuf, bool)> {
    if let Some(p) = env::var_os("ENEC_NVCC").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    if let Some(home) = env::var_os("CUDA_HOME") {
        let p = Path::new(&home).join("bin/nvcc");
        if p.is_file() {
            return Some((p, false));
        }
    }
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join("nvcc"))
        .find(|p| p.is_file())
        .map(|p| (p, false))
}

fn main() {
    println!("cargo:rustc-check-cfg=cfg(enec_cuda)");
    println!("cargo:rerun-if-env-changed=ENEC_NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    let cuda = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cuda");
    for dir in ["src", "include", "sim"] {
        println!("cargo:rerun-if-changed={}", cuda.join(dir).display());
    }
    let Some((nvcc, asked)) = find_nvcc() else {
        println!("cargo:warning=no nvcc found (ENEC_NVCC, CUDA_HOME, PATH): enec decodes on the CPU only");
        return;
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("libenec_cuda.so");
    // The pip package nvidia-cuda-nvcc keeps libcudart_static.a in ../lib beside bin/.
    let lib = nvcc.parent().and_then(Path::parent).map(|p| p.join("lib"));
    let mut cmd = Command::new(&nvcc);
    cmd.args([
        "-O3",
        "-std=c++17",
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-cudart",
        "static",
    ])
    .args(["-gencode", "arch=compute_80,code=sm_80"])
    .args(["-gencode", "arch=compute_90,code=sm_90"])
    // PTX too, so that newer GPUs can run it (compiled by their driver).
    .args(["-gencode", "arch=compute_90,code=compute_90"])
    .arg(cuda.join("src/enec_cuda.cu"))
    .arg(cuda.join("src/loader.cpp"))
    .arg("-o")
    .arg(&out);
    if let Some(lib) = lib.filter(|l| l.join("libcudart_static.a").is_file()) {
        cmd.arg(format!("-L{}", lib.display()));
    }
    match cmd.status() {
        Ok(s) if s.success() => println!("cargo:rustc-cfg=enec_cuda"),
        result if asked => panic!(
            "ENEC_NVCC={}: building the CUDA library failed: {result:?}",
            nvcc.display()
        ),
        result => println!(
            "cargo:warning={} failed ({result:?}): enec decodes on the CPU only",
            nvcc.display()
        ),
    }
}
