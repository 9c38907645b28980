// Times the Rust reference's validated descriptor decode
// (hurray_core::TensorDescriptor::decode) on descriptor files, the way
// bench/decode_bench times ours: rounds of 1000 decodes of the same bytes,
// for about a second per file (DECODE_TIMING_SECONDS: another duration);
// prints the median ns per decode over the rounds. Built as an example of the reference's hurray-core crate by
// bench/rust_reference_decode.py; not part of the Bazel build.
use std::hint::black_box;
use std::time::{Duration, Instant};

use hurray_core::TensorDescriptor;

fn main() {
    let seconds: f64 = std::env::var("DECODE_TIMING_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).expect("cannot read the descriptor");
        let name = std::path::Path::new(&path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Err(e) = TensorDescriptor::decode(&bytes) {
            // A rejection is no comparison: say so instead of timing it.
            println!("{name} rejected: {e}");
            continue;
        }
        const BATCH: u32 = 1000;
        let mut per_decode_ns = Vec::new();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs_f64(seconds) {
            let t0 = Instant::now();
            for _ in 0..BATCH {
                black_box(TensorDescriptor::decode(black_box(&bytes)).is_ok());
            }
            per_decode_ns.push(t0.elapsed().as_nanos() as f64 / BATCH as f64);
        }
        per_decode_ns.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = per_decode_ns[per_decode_ns.len() / 2];
        println!("{name} {median:.1} ns ({} rounds)", per_decode_ns.len());
    }
}
