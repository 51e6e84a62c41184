//! Compiles the AscendC kernels on their CPU model (`ffi/ascendc/`) into the fuzz targets, for
//! `ascendc_diff`, when that directory exists (and a C++17 compiler is there).
use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(enec_ascendc)");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffi/ascendc");
    println!("cargo::rerun-if-changed=ascendc/shim.cpp");
    println!("cargo::rerun-if-changed={}", root.display());
    for dir in ["kernel", "sim", "host"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            for e in entries.flatten() {
                println!("cargo::rerun-if-changed={}", e.path().display());
            }
        }
    }
    if !root.join("sim/kernel_operator.h").exists() || !root.join("kernel/enec_kernel.cpp").exists()
    {
        println!("cargo::warning=ffi/ascendc not found: ascendc_diff does nothing");
        return;
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .include(root.join("sim"))
        .include(root.join("kernel"))
        .file("ascendc/shim.cpp")
        .warnings(false)
        // Linked into `ascendc_diff` alone: the AscendC kernels define C symbols
        // (`enec_decode`, `enec_encode`) that the C ABI (`capi` target) defines too.
        .cargo_metadata(false)
        .compile("enec_ascendc_shim");
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    println!("cargo::rustc-link-arg-bin=ascendc_diff={out}/libenec_ascendc_shim.a");
    println!("cargo::rustc-link-arg-bin=ascendc_diff=-lstdc++");
    println!("cargo::rustc-cfg=enec_ascendc");
}
