#!/usr/bin/python3
"""Our validated descriptor decode against the Rust reference's, same host,
same bytes, runs alternating (issue 18: "validated decode ≥ 3× the Rust
reference").

  bench/rust_reference_decode.py REFERENCE [ROUNDS]

REFERENCE is a checkout (or a bare git directory) of pgillet/hurray. Its
hurray-core crate is copied to a temporary directory and built offline
against Debian's crates (apt: librust-thiserror-dev librust-half-dev
librust-rayon-dev; its manifest is rewritten to their versions), with
bench/rust_reference/decode_timing.rs as an example. Our side is
bench/decode_bench's BM_Decode/<vector>/oneshot, on the three vectors it
writes out (HURRAY_DECODE_BENCH_VECTORS). Each round times, per vector,
the reference then ours for 0.3 s each, back to back (this shared VM's
speed drifts within seconds); the table gives each pair's reference / ours
and the median and lowest over rounds (default 10). Needs cargo (PATH or
~/.cargo/bin) and Bazel.
"""
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

VECTORS = ["dense_f32", "per_channel", "per_block"]
SECONDS = 0.3  # per measurement; a round is one pair per vector
REPO = pathlib.Path(__file__).resolve().parent.parent


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True,
                          **kw).stdout


def cargo():
    found = shutil.which("cargo")
    home = pathlib.Path.home() / ".cargo" / "bin" / "cargo"
    if found:
        return found
    if home.exists():
        return str(home)
    sys.exit("cargo not found")


def copy_core(reference, dest):
    ref = pathlib.Path(reference)
    if (ref / "hurray-core").is_dir():
        shutil.copytree(ref / "hurray-core", dest / "hurray-core")
        return
    git_dir = ref / ".git" if (ref / ".git").exists() else ref
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "HEAD", "hurray-core"],
        check=True, capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)


def offline_manifest(core):
    """The workspace-inherited keys made local; Debian's crate versions."""
    toml = (core / "Cargo.toml").read_text()
    toml = re.sub(r"(?m)^(rust-version|license|repository|homepage)"
                  r"\.workspace = true\n", "", toml)
    toml = toml.replace("version.workspace = true", 'version = "0.1.0"')
    toml = toml.replace("edition.workspace = true", 'edition = "2021"')
    deps = {"thiserror": '"1"', "half": '"1.6"', "rayon": '"1"',
            "serde": '{ version = "1", optional = true }'}
    for name, spec in deps.items():
        toml = re.sub(rf"(?m)^{name} = \{{ workspace = true[^}}]*\}}",
                      f"{name} = {spec}", toml)
    toml = re.sub(r"(?s)\[dev-dependencies\].*?(?=\n\[features\]|\Z)", "",
                  toml)
    toml = re.sub(r"(?s)\[\[bench\]\].*?(?=\n\[|\Z)", "", toml)
    (core / "Cargo.toml").write_text(toml)
    (core / ".cargo").mkdir(exist_ok=True)
    (core / ".cargo" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "debian"\n'
        '[source.debian]\ndirectory = "/usr/share/cargo/registry"\n'
        "[net]\noffline = true\n")


def rust_time(binary, vec_dir, vector):
    out = run([binary, str(vec_dir / f"{vector}.bin")],
              env=dict(os.environ, DECODE_TIMING_SECONDS=str(SECONDS)))
    if " rejected: " in out:
        sys.exit(f"the reference rejects a vector: {out}")
    return float(out.split()[1])


def ours_time(binary, vector):
    out = run([binary, f"--benchmark_filter=BM_Decode/{vector}/oneshot$",
               f"--benchmark_min_time={SECONDS}", "--benchmark_format=json"])
    return json.loads(out)["benchmarks"][0]["cpu_time"]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    run(["bazel", "build", "-c", "opt", "//bench:decode_bench"], cwd=REPO)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ours = tmp / "decode_bench"
        shutil.copy(REPO / "bazel-bin" / "bench" / "decode_bench", ours)
        vec_dir = tmp / "vectors"
        vec_dir.mkdir()
        run([str(ours), "--benchmark_filter=NONE"],
            env=dict(os.environ, HURRAY_DECODE_BENCH_VECTORS=str(vec_dir)))
        copy_core(sys.argv[1], tmp)
        core = tmp / "hurray-core"
        offline_manifest(core)
        (core / "examples").mkdir(exist_ok=True)
        shutil.copy(REPO / "bench" / "rust_reference" / "decode_timing.rs",
                    core / "examples" / "decode_timing.rs")
        run([cargo(), "build", "--release", "--offline", "--example",
             "decode_timing"], cwd=core)
        rust = core / "target" / "release" / "examples" / "decode_timing"
        ratios = {v: [] for v in VECTORS}
        print("| round | " + " | ".join(
            f"{v}: reference ns / ours ns = ×" for v in VECTORS) + " |")
        print("|---" * (len(VECTORS) + 1) + "|")
        for r in range(rounds):
            cells = []
            for v in VECTORS:  # each pair back to back
                ref = rust_time(str(rust), vec_dir, v)
                us = ours_time(str(ours), v)
                ratios[v].append(ref / us)
                cells.append(f"{ref:.1f} / {us:.1f} = {ref / us:.2f}")
            print(f"| {r + 1} | " + " | ".join(cells) + " |")
        print("| median × | " + " | ".join(
            f"{statistics.median(ratios[v]):.2f}" for v in VECTORS) + " |")
        print("| lowest × | " + " | ".join(
            f"{min(ratios[v]):.2f}" for v in VECTORS) + " |")

if __name__ == "__main__":
    main()
