//! How far two threads can scale on this machine, whatever the codec: the same work on one
//! thread and on two (each thread its own copy), for three kinds of work. A codec's two-thread
//! speed-up can only be judged against these.
//!
//! - `scalar`: a chain of dependent multiplies (latency-bound; shares nothing but the core).
//! - `vector`: wide integer arithmetic over 16 KiB that stays in L1 (throughput-bound: it needs
//!   the vector units themselves, which two hardware threads of one core share), AVX-512 where
//!   the CPU has it.
//! - `memcpy`: copying 64 MiB (memory-bound).
//!
//! usage: cargo run --release --example core_scaling  (best of 7 rounds each)

use std::hint::black_box;
use std::time::Instant;

fn scalar(rounds: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..rounds {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
    }
    x
}

fn vector_loop(v: &mut [u32], rounds: u32) {
    for r in 0..rounds {
        for x in v.iter_mut() {
            *x = x.wrapping_mul(2_654_435_761).wrapping_add(r) ^ (*x >> 7);
        }
        black_box(&mut *v);
    }
}

/// The same loop compiled for the widest vectors the codec's kernels use here.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
unsafe fn vector_avx512(v: &mut [u32], rounds: u32) {
    vector_loop(v, rounds)
}

fn vector(v: &mut [u32], rounds: u32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { vector_avx512(v, rounds) };
    }
    vector_loop(v, rounds)
}

/// Best wall time of `f` over 7 rounds.
fn best(mut f: impl FnMut()) -> f64 {
    (0..7)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// One thread doing `work(0)`, then two threads doing `work(0)` and `work(1)` at once: the
/// speed-up of the pair (2.0 = perfect).
fn scaling(work: impl Fn(usize) + Sync) -> f64 {
    let one = best(|| work(0));
    let two = best(|| {
        std::thread::scope(|s| {
            s.spawn(|| work(1));
            work(0);
        })
    });
    2.0 * one / two
}

fn main() {
    let s = scaling(|_| {
        black_box(scalar(black_box(200_000_000)));
    });
    let buffers: Vec<std::sync::Mutex<Vec<u32>>> = (0..2)
        .map(|_| std::sync::Mutex::new(vec![1u32; 4096]))
        .collect();
    let v = scaling(|i| vector(&mut buffers[i].lock().unwrap(), 100_000));
    const BYTES: usize = 64 << 20;
    let copies: Vec<std::sync::Mutex<(Vec<u8>, Vec<u8>)>> = (0..2)
        .map(|_| std::sync::Mutex::new((vec![7u8; BYTES], vec![0u8; BYTES])))
        .collect();
    let m = scaling(|i| {
        let mut pair = copies[i].lock().unwrap();
        let (src, dst) = &mut *pair;
        dst.copy_from_slice(black_box(src));
    });
    println!("two threads against one, same work each (2.00 = perfect):");
    println!("  scalar (dependent multiplies)   {s:.2}x");
    println!("  vector (arithmetic in L1)       {v:.2}x");
    println!("  memcpy (64 MiB)                 {m:.2}x");
}
