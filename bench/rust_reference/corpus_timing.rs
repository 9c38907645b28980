// The Rust reference's side of bench/corpus_decode_timing.cc (issue 47 item
// 4): hurray_core::TensorDescriptor::decode, which validates as it decodes
// (the reference has no decode without validation), over a cycle of
// descriptors. Built as an example of the reference's hurray-core crate by
// bench/rust_reference_corpus.py; not part of the Bazel build.
//
//   corpus_timing check LIST             "accept PATH" / "reject PATH" for
//                                        each path of LIST (one a line)
//   corpus_timing time SECONDS LIST      median ns per descriptor over
//                                        rounds of one decode of each
use std::hint::black_box;
use std::time::{Duration, Instant};

use hurray_core::TensorDescriptor;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "check" {
        let list = std::fs::read_to_string(&args[2]).expect("LIST");
        for path in list.lines().filter(|l| !l.is_empty()) {
            let ok = std::fs::read(path)
                .map(|b| TensorDescriptor::decode(&b).is_ok())
                .unwrap_or(false);
            println!("{} {}", if ok { "accept" } else { "reject" }, path);
        }
        return;
    }
    if args.len() != 4 || args[1] != "time" {
        eprintln!("usage: corpus_timing check LIST | time SECONDS LIST");
        std::process::exit(2);
    }
    let seconds: f64 = args[2].parse().expect("SECONDS");
    let list = std::fs::read_to_string(&args[3]).expect("LIST");
    let all: Vec<Vec<u8>> = list
        .lines()
        .filter(|l| !l.is_empty())
        .map(|p| std::fs::read(p).expect("a listed file"))
        .collect();
    for b in &all {
        if TensorDescriptor::decode(b).is_err() {
            eprintln!("a listed descriptor is rejected");
            std::process::exit(1);
        }
    }
    let mut per = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        let t0 = Instant::now();
        for b in &all {
            black_box(TensorDescriptor::decode(black_box(b)).is_ok());
        }
        per.push(t0.elapsed().as_nanos() as f64 / all.len() as f64);
    }
    per.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{:.2} ns ({} rounds, {} descriptors)",
        per[per.len() / 2],
        per.len(),
        all.len()
    );
}
