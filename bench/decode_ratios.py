#!/usr/bin/env python3
"""Prints bench/decode_bench's JSON output as a Markdown table of ratios.

Per vector: the one-shot decode with the fast path (ns, CPU time), the same
with ParseOptions::fast_path off (the general state machine and validator)
and their ratio, the 4 KiB-chunk stream and the 1-byte feed as multiples of
the one-shot time (issue 18: ≤ 1.1 and ≤ 8), the same two ratios measured
paired (BM_Paired: the three feeds one after the other in each round, the
median over rounds of each round's ratio, which the host's drift between
separate benchmarks does not move), and memcpy of the descriptor's bytes,
the parse-nothing floor. With repetitions, medians; the noise column
is the largest coefficient of variation among the row's runs.

  bazel build -c opt //bench:decode_bench
  bazel-out/k8-opt/bin/bench/decode_bench --benchmark_min_time=0.2 \\
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \\
      --benchmark_out=/tmp/decode.json --benchmark_out_format=json
  python3 bench/decode_ratios.py /tmp/decode.json
"""
import json
import sys


def main(path):
    runs = json.load(open(path))["benchmarks"]
    aggregated = any(r.get("run_type") == "aggregate" for r in runs)
    ns, cv, paired = {}, {}, {}
    for r in runs:
        name = r.get("run_name", r["name"])
        scale = {"ns": 1, "us": 1e3, "ms": 1e6}[r.get("time_unit", "ns")]
        if aggregated and r.get("run_type") != "aggregate":
            continue
        kind = r.get("aggregate_name", "median") if aggregated else "median"
        if kind == "median":
            # chunk4k: one iteration is 1000 descriptors (per_desc counter).
            ns[name] = r["per_desc"] * 1e9 if "per_desc" in r \
                else r["cpu_time"] * scale
            if "byte_x" in r:  # BM_Paired: ratios measured round by round
                paired[name] = (r["chunk4k_x"], r["byte_x"])
        elif kind == "cv":
            cv[name] = r["cpu_time"]
    vectors = [n.split("/")[1] for n in ns
               if n.startswith("BM_Decode/") and n.endswith("/oneshot")]
    print("| vector | one-shot ns | general ns | one-shot / general "
          "| 4 KiB chunks / one-shot | 1-byte feed / one-shot "
          "| paired: 4 KiB / one-shot | paired: 1-byte / one-shot "
          "| memcpy ns | noise (max cv) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in vectors:
        one = ns[f"BM_Decode/{v}/oneshot"]
        gen = ns.get(f"BM_Decode/{v}/oneshot_general")
        chunk = ns.get(f"BM_Decode/{v}/chunk4k")
        byte = ns.get(f"BM_Decode/{v}/byte")
        mem = ns.get(f"BM_Memcpy/{v}")
        names = [f"BM_Decode/{v}/{m}"
                 for m in ("oneshot", "oneshot_general", "chunk4k", "byte")]
        noise = max([cv.get(n, 0.0) for n in names] + [0.0]) * 100
        pc, pb = paired.get(f"BM_Paired/{v}", (float("nan"),) * 2)
        print(f"| {v} | {one:.1f} | {gen:.1f} | {one / gen:.2f} "
              f"| {chunk / one:.2f} | {byte / one:.1f} "
              f"| {pc:.2f} | {pb:.1f} | {mem:.1f} "
              f"| {noise:.0f} % |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} BENCH.json")
    main(sys.argv[1])
