#!/usr/bin/python3
"""Decode and validated decode over a cycle of the corpus's descriptors,
against the Rust reference's decode (which validates), same host, same
bytes, alternating (issue 47 item 4: "validated ≥ 4× the reference's
decode + validation over the cycle").

  bench/rust_reference_corpus.py REFERENCE [ROUNDS] [SECONDS] [BASELINE]

REFERENCE is a checkout (or a bare git directory) of pgillet/hurray, built
offline as bench/rust_reference_decode.py builds it, with
bench/rust_reference/corpus_timing.rs as an example. The descriptors: every
file under corpus/ (every fuzz corpus and corpus/descriptors) that is one
whole descriptor (its descriptor_length is the file's size) accepted by our
strict validated decode AND by the reference, deduplicated by content. Our
side is bench/corpus_decode_timing (-c opt). Each round times the three
(reference, ours validated, ours decode without validation) for SECONDS
each (default 0.5), in an order that rotates from round to round; each
figure is the median ns per descriptor over cycles of the whole list. The
table gives per round reference / ours and the median and range over
ROUNDS (default 10).

BASELINE, optional, is another build of bench/corpus_decode_timing (say of
the main branch, `bazel build -c opt` there and copy the binary out): its
validated and decode timings join the rotation, so before and after come
from the same rounds, and the table adds baseline / ours per round.
"""
import hashlib
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from rust_reference_decode import cargo, copy_core, offline_manifest, run  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent


def accepted(cmd, listfile):
    out = run(cmd + ["check", str(listfile)])
    return {line.split(" ", 1)[1] for line in out.splitlines()
            if line.startswith("accept ")}


def ns(out):
    return float(out.split()[0])


def main():
    if not 2 <= len(sys.argv) <= 5:
        sys.exit(__doc__)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    seconds = sys.argv[3] if len(sys.argv) > 3 else "0.5"
    baseline = (str(pathlib.Path(sys.argv[4]).resolve())
                if len(sys.argv) > 4 else None)
    run(["bazel", "build", "-c", "opt", "//bench:corpus_decode_timing"],
        cwd=REPO)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ours = tmp / "corpus_decode_timing"
        shutil.copy(REPO / "bazel-bin" / "bench" / "corpus_decode_timing", ours)
        copy_core(sys.argv[1], tmp)
        core = tmp / "hurray-core"
        offline_manifest(core)
        (core / "examples").mkdir(exist_ok=True)
        shutil.copy(REPO / "bench" / "rust_reference" / "corpus_timing.rs",
                    core / "examples" / "corpus_timing.rs")
        run([cargo(), "build", "--release", "--offline", "--example",
             "corpus_timing"], cwd=core)
        rust = core / "target" / "release" / "examples" / "corpus_timing"
        # Every corpus file, one per content.
        seen, files = set(), []
        for p in sorted((REPO / "corpus").rglob("*")):
            if not p.is_file() or p.stat().st_size < 10:
                continue
            h = hashlib.sha256(p.read_bytes()).digest()
            if h not in seen:
                seen.add(h)
                files.append(str(p))
        every = tmp / "every.txt"
        every.write_text("\n".join(files) + "\n")
        ours_ok = accepted([str(ours)], every)
        ref_ok = accepted([str(rust)], every)
        both = [f for f in files if f in ours_ok and f in ref_ok]
        print(f"{len(files)} distinct corpus files; ours accepts "
              f"{len(ours_ok)} as whole descriptors, the reference "
              f"{len(ref_ok)}; both: {len(both)} (ours only: "
              f"{len(ours_ok - ref_ok)}, the reference only: "
              f"{len(ref_ok - ours_ok)})")
        for f in sorted(ours_ok - ref_ok)[:20]:
            print("  ours only:", os.path.relpath(f, REPO))
        for f in sorted(ref_ok - ours_ok)[:20]:
            print("  reference only:", os.path.relpath(f, REPO))
        listfile = tmp / "both.txt"
        listfile.write_text("\n".join(both) + "\n")
        kinds = {
            "reference": [str(rust), "time", seconds, str(listfile)],
            "validated": [str(ours), "time", seconds, "validated",
                          str(listfile)],
            "decode": [str(ours), "time", seconds, "decode", str(listfile)],
        }
        if baseline:
            kinds["base validated"] = [baseline, "time", seconds,
                                       "validated", str(listfile)]
            kinds["base decode"] = [baseline, "time", seconds, "decode",
                                    str(listfile)]
        order = list(kinds)
        t = {k: [] for k in kinds}
        ratios = [("ref / validated", "reference", "validated"),
                  ("ref / decode", "reference", "decode")]
        if baseline:
            ratios += [("base / ours validated", "base validated",
                        "validated"),
                       ("base / ours decode", "base decode", "decode")]
        print("| round | " + " | ".join(f"{k} ns" for k in kinds) + " | " +
              " | ".join(name for name, _, _ in ratios) + " |")
        print("|---" * (1 + len(kinds) + len(ratios)) + "|")
        for r in range(rounds):
            shift = r % len(order)
            rot = order[shift:] + order[:shift]
            got = {k: ns(run(kinds[k])) for k in rot}
            for k in kinds:
                t[k].append(got[k])
            print(f"| {r + 1} | " +
                  " | ".join(f"{got[k]:.1f}" for k in kinds) + " | " +
                  " | ".join(f"{got[a] / got[b]:.2f}" for _, a, b in ratios) +
                  " |")
        cells = []
        for _, a, b in ratios:
            q = [x / y for x, y in zip(t[a], t[b])]
            cells.append(f"{statistics.median(q):.2f} "
                         f"[{min(q):.2f}–{max(q):.2f}]")
        print("| median | " +
              " | ".join(f"{statistics.median(t[k]):.1f}" for k in kinds) +
              " | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
