#!/usr/bin/env python3
"""Prints bench/dequant_bench's JSON output as a Markdown table of ratios.

Every figure is divided by BM_StoreOnly of the same run and size (Highway
stores of a constant over the same float32 output, bench/store_only.h): the
store bound, which no kernel can beat (issue 18: ≥ 0.9 × in L2, ≥ 0.95 × at
DRAM size). Each row is also divided by its own BM_TrafficBound (the store
loop that also reads the row's input bytes, converting nothing): how close
the kernel comes to moving its bytes, whatever the conversion. The thread
columns divide the 2-thread wall time rate by the 1-thread one (target ≥
1.8). With repetitions, the medians are used and the noise column gives the
largest coefficient of variation of the row's runs.

The host's rate moves from one minute to the next (a shared VM): randomly
interleaved repetitions put every row and its baselines in the same
minutes, so only same-run ratios are compared.

  bazel build -c opt //bench:dequant_bench
  bazel-bin/bench/dequant_bench \\
      --benchmark_filter='^(BM_StoreOnly|BM_StoreOnlyThreads|BM_Memcpy|BM_ConvertInt8|BM_Dequant|BM_TrafficBound|BM_DequantThreads)/' \\
      --benchmark_min_time=0.05 --benchmark_repetitions=10 \\
      --benchmark_enable_random_interleaving=true \\
      --benchmark_report_aggregates_only=true \\
      --benchmark_out=/tmp/dequant.json --benchmark_out_format=json
  python3 bench/dequant_ratios.py /tmp/dequant.json

A run without the DRAM rows (e.g. --benchmark_filter ending in /65536$)
prints the L2 columns only. Several runs, e.g. two binaries (before and
after a change) run alternately, each round a separate run:

  python3 bench/dequant_ratios.py --rounds before=b1.json,b2.json \\
      after=a1.json,a2.json

prints, per L2 row, the median and range over the runs of its ratio to
BM_StoreOnly of the same run, a column per label.

The paired rows (BM_BoundsPaired, BM_ThreadsPaired: each row and its
baselines timed in the same round, in orders where each pass follows every
other equally often) give the figures
least moved by the host; they print first when the run has them:

  bazel-bin/bench/dequant_bench \\
      --benchmark_filter='^BM_(Bounds|Threads)Paired/' \\
      --benchmark_min_time=2 --benchmark_out=/tmp/paired.json \\
      --benchmark_out_format=json
"""
import json
import re
import sys

L2, DRAM = 65536, 67108864


def load(path):
    """Returns {name: el/ns} (medians when aggregated) and {name: cv}."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    rate, cv = {}, {}
    aggregated = any(r.get("run_type") == "aggregate" for r in runs)
    for r in runs:
        name = r.get("run_name", r["name"])
        if aggregated:
            if r.get("run_type") != "aggregate":
                continue
            if r.get("aggregate_name") == "median" and "items_per_second" in r:
                rate[name] = r["items_per_second"] / 1e9
            elif r.get("aggregate_name") == "cv":
                cv[name] = r.get("items_per_second", 0.0)
        elif "items_per_second" in r:
            rate[name] = r["items_per_second"] / 1e9
    return rate, cv


def paired(path):
    """Prints the BM_BoundsPaired and BM_ThreadsPaired counters, one row per
    scheme/storage; returns whether the run had any. Their ratios are taken
    within each round (rates seconds apart on this host cannot be divided).
    """
    rows = {}
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    for r in runs:
        if (r.get("run_type") == "aggregate"
                and r.get("aggregate_name") != "median"):
            continue
        m = re.fullmatch(
            r"BM_(Bounds|Threads)Paired/([^/]+/[^/]+)/\d+/real_time",
            r.get("run_name", r["name"]))
        if not m:
            continue
        if r.get("error_occurred"):
            sys.exit(f"dequant_ratios: {r['name']} failed: "
                     f"{r.get('error_message', '')}")
        rows.setdefault(m.group(2), {}).update(r)
    if not rows:
        return False
    print("Paired in each round, DRAM size (medians over rounds of in-round "
          "ratios):")
    print()
    print("| scheme/storage | × store loop | bound × store loop | × own bound "
          "| 2 thr / 1 | store loop 2 thr / 1 | 2 thr × store loop 2 thr |")
    print("|---|---|---|---|---|---|---|")

    def f(row, key):
        return f"{row[key]:.2f}" if key in row else ""

    for key, row in rows.items():
        print("| " + " | ".join([key, f(row, "of_store"),
                                 f(row, "bound_of_store"), f(row, "of_bound"),
                                 f(row, "dequant_x"), f(row, "store_x"),
                                 f(row, "of_store_2t")]) + " |")
    print()
    return True


def main(path):
    had_paired = paired(path)
    rate, cv = load(path)
    get = rate.get
    store_l2, store_dram = get(f"BM_StoreOnly/{L2}"), get(f"BM_StoreOnly/{DRAM}")
    if not store_l2:
        if had_paired:
            return
        sys.exit("dequant_ratios: the run lacks BM_StoreOnly and the paired "
                 "rows")
    store_dram = store_dram or 0.0

    def thr(prefix, n, t):
        return get(f"{prefix}/{n}/threads:{t}/real_time")

    def pct(name):
        return cv.get(name, 0.0) * 100

    print(f"Baselines (el/ns, medians): BM_StoreOnly L2 {store_l2:.2f}, DRAM "
          f"{store_dram:.2f}; BM_ConvertInt8 L2 "
          f"{get(f'BM_ConvertInt8/{L2}') or 0:.2f}, DRAM "
          f"{get(f'BM_ConvertInt8/{DRAM}') or 0:.2f}; BM_Memcpy L2 "
          f"{get(f'BM_Memcpy/{L2}') or 0:.2f}, DRAM "
          f"{get(f'BM_Memcpy/{DRAM}') or 0:.2f}.")
    s1, s2 = thr("BM_StoreOnlyThreads", L2, 1), thr("BM_StoreOnlyThreads", L2, 2)
    d1, d2 = thr("BM_StoreOnlyThreads", DRAM, 1), thr("BM_StoreOnlyThreads", DRAM, 2)
    for label, one, two in (("L2", s1, s2), ("DRAM", d1, d2)):
        if one and two:
            print(f"BM_StoreOnlyThreads {label}: 2 threads / 1 = "
                  f"{two / one:.2f} (1 thread {one:.2f} el/ns, wall time).")
    print()
    print("| scheme/storage | L2 el/ns | L2 × store | L2 × traffic "
          "| DRAM el/ns | DRAM × store | DRAM × traffic "
          "| 2 thr / 1, L2 | 2 thr / 1, DRAM | noise (max cv) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in rate:
        m = re.fullmatch(rf"BM_Dequant/([^/]+)/([^/]+)/{L2}", name)
        if not m:
            continue
        scheme, storage = m.groups()
        key = f"{scheme}/{storage}"
        l2 = rate[name]
        dram = get(f"BM_Dequant/{key}/{DRAM}")
        bound_l2 = get(f"BM_TrafficBound/{key}/{L2}")
        bound_dram = get(f"BM_TrafficBound/{key}/{DRAM}")
        t = [thr(f"BM_DequantThreads/{key}", n, k) for n in (L2, DRAM)
             for k in (1, 2)]
        names = [name, f"BM_Dequant/{key}/{DRAM}",
                 f"BM_TrafficBound/{key}/{L2}",
                 f"BM_TrafficBound/{key}/{DRAM}"] + [
            f"BM_DequantThreads/{key}/{n}/threads:{k}/real_time"
            for n in (L2, DRAM) for k in (1, 2)]
        noise = max(pct(n) for n in names)
        cells = [
            key,
            f"{l2:.2f}",
            f"{l2 / store_l2:.2f}",
            f"{l2 / bound_l2:.2f}" if bound_l2 else "",
            f"{dram:.2f}" if dram else "",
            f"{dram / store_dram:.2f}" if dram and store_dram else "",
            f"{dram / bound_dram:.2f}" if dram and bound_dram else "",
            f"{t[1] / t[0]:.2f}" if t[0] and t[1] else "",
            f"{t[3] / t[2]:.2f}" if t[2] and t[3] else "",
            f"{noise:.0f} %" if cv else "",
        ]
        print("| " + " | ".join(cells) + " |")


def rounds(groups):
    """Prints, per L2 row, the median and range over runs of its ratio to
    BM_StoreOnly of the same run, one column per group of runs (e.g. the
    binaries before and after a change, run alternately). When the last
    group's runs have the rows' BM_TrafficBound, two more columns from
    them: the traffic bound × the store loop, and the row × its traffic
    bound, each of the same run."""
    cols = []
    bound, to_bound = {}, {}  # the last group's traffic-bound ratios
    for label, paths in groups:
        per_row = {}
        stores = []
        bound, to_bound = {}, {}
        for path in paths:
            rate, _ = load(path)
            store = rate.get(f"BM_StoreOnly/{L2}")
            if not store:
                sys.exit(f"dequant_ratios: {path} lacks BM_StoreOnly/{L2}")
            stores.append(store)
            for name, r in rate.items():
                m = re.fullmatch(rf"BM_Dequant/([^/]+/[^/]+)/{L2}", name)
                if m:
                    per_row.setdefault(m.group(1), []).append(r / store)
                    t = rate.get(f"BM_TrafficBound/{m.group(1)}/{L2}")
                    if t:
                        bound.setdefault(m.group(1), []).append(t / store)
                        to_bound.setdefault(m.group(1), []).append(r / t)
        cols.append((label, per_row, stores))
    extra = []
    if bound:
        last = cols[-1][0]
        extra = [(f"{last}: traffic bound × store loop", bound),
                 (f"{last} × its traffic bound", to_bound)]

    def cell(values):
        if not values:
            return ""
        v = sorted(values)
        med = (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
        return f"{med:.3f} [{v[0]:.3f}–{v[-1]:.3f}]"

    print("| scheme/storage | " + " | ".join(
        [f"{label} × store loop ({len(stores)} runs)"
         for label, _, stores in cols] + [h for h, _ in extra]) + " |")
    print("|---|" + "---|" * (len(cols) + len(extra)))
    print("| BM_StoreOnly el/ns | " + " | ".join(
        [cell(stores) for _, _, stores in cols] + [""] * len(extra)) + " |")
    keys = []
    for _, per_row, _ in cols:
        keys += [k for k in per_row if k not in keys]
    order = ["per_tensor", "per_channel", "per_block", "per_block_k16",
             "per_block_k64", "nf4", "mxfp"]
    types = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int4",
             "uint4", "int2", "uint2", "float8_e4m3", "float8_e5m2",
             "float4_e2m1", "float6_e2m3", "float6_e3m2"]

    def rank(key):
        scheme, _, storage = key.partition("/")
        return (order.index(scheme) if scheme in order else len(order),
                types.index(storage) if storage in types else len(types))

    keys.sort(key=rank)
    for key in keys:
        print(f"| {key} | " + " | ".join(
            [cell(per_row.get(key, [])) for _, per_row, _ in cols] +
            [cell(v.get(key, [])) for _, v in extra]) + " |")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--rounds":
        # --rounds LABEL=a.json,b.json [LABEL=c.json,d.json ...]
        groups = []
        for arg in sys.argv[2:]:
            label, _, files = arg.partition("=")
            groups.append((label, files.split(",")))
        rounds(groups)
    elif len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} BENCH.json | --rounds "
                 "LABEL=A.json,B.json [LABEL=...]")
    else:
        main(sys.argv[1])
