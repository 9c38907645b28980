#!/usr/bin/env python3
"""Prints bench/dequant_bench's JSON output as a Markdown table of ratios.

Every figure is divided by BM_ConvertInt8 of the same run and size, so runs
on machines (or days) of different speed compare. The "L2 target" column is
issue 3's absolute target scaled to the convert loop's 34 el/ns on the
reference machine (25/34 for 8-bit affine, 20/34 for 4-bit affine and NF4,
15/34 for MXFP minifloats); "—" where the issue sets none.

  bazel build -c opt //bench:dequant_bench
  bazel-bin/bench/dequant_bench \
      --benchmark_filter='^(BM_Memcpy|BM_ConvertInt8|BM_Dequant|BM_DequantThreads)/' \
      --benchmark_out=/tmp/dequant.json --benchmark_out_format=json
  python3 bench/dequant_ratios.py /tmp/dequant.json
"""
import json
import re
import sys

L2, DRAM = 65536, 67108864
REFERENCE_CONVERT_L2 = 34.0  # el/ns, issue 3's orientation figure


def l2_target(scheme, storage):
    if scheme == "mxfp" and storage.startswith("float"):
        return 15.0
    if scheme == "nf4" or storage in ("int4", "uint4"):
        return 20.0
    if storage in ("int8", "uint8"):
        return 25.0
    return None


def main(path):
    runs = json.load(open(path))["benchmarks"]
    rate = {r["name"]: r["items_per_second"] / 1e9 for r in runs
            if "items_per_second" in r}
    get = rate.get

    conv_l2, conv_dram = get(f"BM_ConvertInt8/{L2}"), get(f"BM_ConvertInt8/{DRAM}")
    if not conv_l2 or not conv_dram:
        sys.exit("dequant_ratios: the run lacks BM_ConvertInt8 at both sizes")
    print(f"Baselines (el/ns): BM_ConvertInt8 L2 {conv_l2:.2f}, DRAM "
          f"{conv_dram:.2f}; BM_Memcpy L2 {get(f'BM_Memcpy/{L2}') or 0:.2f}, "
          f"DRAM {get(f'BM_Memcpy/{DRAM}') or 0:.2f}\n")
    print("| scheme/storage | L2 el/ns | L2 × convert | L2 target × convert "
          "| DRAM el/ns | DRAM × convert | 2 threads / 1 (DRAM) |")
    print("|---|---|---|---|---|---|---|")
    for name in rate:
        m = re.fullmatch(rf"BM_Dequant/([^/]+)/([^/]+)/{L2}", name)
        if not m:
            continue
        scheme, storage = m.groups()
        l2 = rate[name]
        dram = get(f"BM_Dequant/{scheme}/{storage}/{DRAM}")
        one = get(f"BM_DequantThreads/{scheme}/{storage}/{DRAM}/threads:1/real_time")
        two = get(f"BM_DequantThreads/{scheme}/{storage}/{DRAM}/threads:2/real_time")
        target = l2_target(scheme, storage)
        cells = [
            f"{scheme}/{storage}",
            f"{l2:.2f}",
            f"{l2 / conv_l2:.2f}",
            f"{target / REFERENCE_CONVERT_L2:.2f}" if target else "—",
            f"{dram:.2f}" if dram else "",
            f"{dram / conv_dram:.2f}" if dram else "",
            f"{two / one:.2f}" if one and two else "",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} BENCH.json")
    main(sys.argv[1])
