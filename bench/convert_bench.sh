#!/usr/bin/env bash
# Usage: bench/convert_bench.sh [GIB] [RUNS]      (defaults: 1 GiB, 3 runs)
#
# `hurray convert` of a GIB safetensors file (16 F32 [rows, 4096] tensors of
# random normal values) and of a GIB GGUF file (16 Q8_0 tensors: the lossless rewrite with
# nibble-free int8 codes and float16 scales), each against `cp` of the same
# file in the same run, page cache warm for both. Reports the throughput
# ratio (cp time / convert time: 1.0 = as fast as cp; issue 16 asks >= 0.5)
# and the peak RSS of the conversion from /usr/bin/time -v. The best of RUNS
# is kept for each command (runs interleaved with cp). Needs 4 × GIB of free space in $TMPDIR.
# ONLY=kquant skips the safetensors and Q8_0 files (the K-quant rounds
# below alone). QUANTIZE=SCHEME (e.g. per_block:int4) also times `convert --quantize
# SCHEME` of the safetensors file against the same cp.
#
# bench/convert_bench.sh --paired [GIB] [ROUNDS] [DIR...]   (issue 47 item 3,
# issue 48's shard speed; defaults 1 GiB, 9 rounds, /dev/shm and /tmp)
#
# On each DIR (tmpfs, disk): a GIB safetensors file against `cp` of it, and
# the same bytes as a 2-shard model (model.safetensors.index.json) against
# `cat` of the shards into one file, in alternating rounds (the baseline
# first in odd rounds, convert first in even ones), page cache warm, each
# output removed before the next command. Prints per pair the median and
# range of the per-round ratio convert / baseline (<= 1.0: as fast), the
# median seconds of each, and convert's peak RSS (max over the rounds,
# /usr/bin/time -v). No fsync on either side: both leave dirty pages.
#
# ALIGN_DATA=1 (--paired) pads each safetensors header so that its data
# starts on a 4096-byte boundary, as the output's buffers do: the kernel's
# copy then maps each page to one page.
# BASELINE=<another hurray binary> (both modes) adds its conversion of the
# same input to every round (the order rotating with the others), and prints
# its ratios and this build's over it (after / before) from the same rounds.
# DATA_ALIGNMENT=BYTES (--paired) passes `--data-alignment BYTES` to this
# build's convert, BASELINE_ALIGNMENT=BYTES to BASELINE's: with BASELINE set
# to this build's own hurray, the two alignments compare in the same rounds
# (issue 47 item 3: 2097152 against the default 4096). Each convert's output
# size is printed with its ratio to the input's. SYNC=1 (--paired) runs
# sync(2) before each timed command, outside its time, so that no command
# meets the writeback of earlier outputs (on a disk, rounds otherwise
# spread over 0.2-5.8x).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --paired ]]; then
  shift
  bazel build -c opt //tools:hurray >/dev/null 2>&1
  hurray="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/hurray"
  exec python3 - "${hurray}" "$@" <<'PY'
import json, os, random, shutil, statistics, struct, subprocess, sys, tempfile, time
hurray = sys.argv[1]
before = os.environ.get("BASELINE", "")
align_args = (["--data-alignment", os.environ["DATA_ALIGNMENT"]]
              if os.environ.get("DATA_ALIGNMENT") else [])
base_align_args = (["--data-alignment", os.environ["BASELINE_ALIGNMENT"]]
                   if os.environ.get("BASELINE_ALIGNMENT") else [])
# ALIGN_DATA=1: the header padded so that the tensors' data starts at a
# 4096-byte boundary of each file, as it does in the output (FILE-REG-02).
align = os.environ.get("ALIGN_DATA", "") not in ("", "0")
gib = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 9
dirs = sys.argv[4:] or ["/dev/shm", "/tmp"]
total = int(gib * (1 << 30))
n = 16
per = total // n // 16384 * 16384
random.seed(1)
chunk = struct.pack("<262144f", *(random.gauss(0, 1) for _ in range(262144)))

def st_file(path, names):
    hdr = {t: {"dtype": "F32", "shape": [per // 16384, 4096],
               "data_offsets": [i * per, (i + 1) * per]}
           for i, t in enumerate(names)}
    h = json.dumps(hdr).encode()
    h += b" " * (-(len(h) + 8) % 4096 if align else -len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        left = per * len(names)
        while left:
            k = min(left, len(chunk)); f.write(chunk[:k]); left -= k

sizes = {}  # output bytes by the command's first two words and its args

sync_first = os.environ.get("SYNC", "") not in ("", "0")

def timed(cmd, out, rss, cpu):
    """Wall seconds; appends peak RSS (KiB) and user + system seconds."""
    if os.path.exists(out): os.unlink(out)
    if sync_first: os.sync()
    tv = out + ".time"
    t0 = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-v", "-o", tv] + cmd, check=True,
                   stdout=subprocess.DEVNULL)
    t = time.perf_counter() - t0
    c = 0.0
    for line in open(tv):
        if "Maximum resident" in line:
            rss.append(int(line.split(":")[1]))
        if "User time" in line or "System time" in line:
            c += float(line.split(":")[1])
    cpu.append(c)
    sizes[tuple(cmd)] = os.path.getsize(out)
    os.unlink(out)
    return t

def cat_into(out, shards):
    return ["sh", "-c", 'cat "$@" > ' + out, "cat"] + shards

with open("/proc/loadavg") as f:
    print("load average at start:", f.read().split()[:3])
for base in dirs:
    d = tempfile.mkdtemp(prefix="convert_paired.", dir=base)
    try:
        names = [f"t{i}" for i in range(n)]
        st_file(f"{d}/model.safetensors", names)
        half = n // 2
        shard_files = [f"model-0000{k + 1}-of-00002.safetensors" for k in range(2)]
        wm = {}
        for k in range(2):
            part = names[k * half:(k + 1) * half]
            st_file(f"{d}/{shard_files[k]}", part)
            wm.update({t: shard_files[k] for t in part})
        with open(f"{d}/model.safetensors.index.json", "w") as f:
            json.dump({"metadata": {"total_size": per * n}, "weight_map": wm}, f)
        for p in os.listdir(d):
            subprocess.run(["cat", f"{d}/{p}"], stdout=subprocess.DEVNULL)
        out = f"{d}/out"
        pairs = [
            ("safetensors vs cp", ["cp", f"{d}/model.safetensors", out],
             [hurray, "convert", f"{d}/model.safetensors", "-o", out] + align_args),
            ("2 shards vs cat", cat_into(out, [f"{d}/{s}" for s in shard_files]),
             [hurray, "convert", f"{d}/model.safetensors.index.json", "-o", out]
             + align_args),
        ]
        for label, base_cmd, cv_cmd in pairs:
            ratios, tb, tc, rss, brss, cb, cc = [], [], [], [], [], [], []
            t0s, c0s, r0s, rss0 = [], [], [], []
            old_cmd = ([before] + [a for a in cv_cmd[1:] if a not in align_args]
                       + base_align_args) if before else None
            for r in range(rounds):
                if old_cmd is None:
                    if r % 2 == 0:
                        b = timed(base_cmd, out, brss, cb)
                        c = timed(cv_cmd, out, rss, cc)
                    else:
                        c = timed(cv_cmd, out, rss, cc)
                        b = timed(base_cmd, out, brss, cb)
                else:
                    # Three commands, each first, second and last in turn.
                    got = {}
                    for k in range(3):
                        which = (r + k) % 3
                        if which == 0:
                            got[0] = timed(base_cmd, out, brss, cb)
                        elif which == 1:
                            got[1] = timed(cv_cmd, out, rss, cc)
                        else:
                            got[2] = timed(old_cmd, out, rss0, c0s)
                    b, c = got[0], got[1]
                    t0s.append(got[2]); r0s.append(got[2] / b)
                tb.append(b); tc.append(c); ratios.append(c / b)
            cpu_ratios = [c / b for b, c in zip(cb, cc) if b > 0]
            fs = subprocess.run(["stat", "-f", "-c", "%T", d], capture_output=True,
                                text=True).stdout.strip()
            print(f"{base} ({fs}) {label}: {per * n / 2**20:.0f} MiB, {rounds} rounds: "
                  f"ratio median {statistics.median(ratios):.3f} "
                  f"[{min(ratios):.3f}-{max(ratios):.3f}], baseline median "
                  f"{statistics.median(tb):.3f} s, convert median "
                  f"{statistics.median(tc):.3f} s, convert peak RSS "
                  f"{max(rss) / 1024:.1f} MiB; CPU (user + system) median "
                  f"{statistics.median(cb):.3f} s vs {statistics.median(cc):.3f} s, "
                  f"per-round CPU ratio median "
                  f"{statistics.median(cpu_ratios) if cpu_ratios else float('nan'):.3f}")
            print("  rounds (convert/baseline):",
                  " ".join(f"{x:.2f}" for x in ratios))
            insize = sizes[tuple(base_cmd)]
            print(f"  output bytes: baseline {insize}, convert "
                  f"{sizes[tuple(cv_cmd)]} ({sizes[tuple(cv_cmd)] / insize:.4f})"
                  + (f", BASELINE convert {sizes[tuple(old_cmd)]} "
                     f"({sizes[tuple(old_cmd)] / insize:.4f})" if old_cmd else ""))
            if old_cmd is not None:
                ab = [c / o for c, o in zip(tc, t0s)]
                abc = [c / o for c, o in zip(cc, c0s) if o > 0]
                print(f"  BASELINE convert: ratio median {statistics.median(r0s):.3f} "
                      f"[{min(r0s):.3f}-{max(r0s):.3f}], median {statistics.median(t0s):.3f} s, "
                      f"CPU median {statistics.median(c0s):.3f} s, peak RSS "
                      f"{max(rss0) / 1024:.1f} MiB; after / before (same round): wall "
                      f"median {statistics.median(ab):.3f} [{min(ab):.3f}-{max(ab):.3f}], "
                      f"CPU median {statistics.median(abc):.3f} [{min(abc):.3f}-{max(abc):.3f}]")
    finally:
        shutil.rmtree(d)
with open("/proc/loadavg") as f:
    print("load average at end:", f.read().split()[:3])
PY
fi
gib="${1:-1}"
runs="${2:-3}"
bazel build -c opt //tools:hurray >/dev/null 2>&1
hurray="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/hurray"
dir="$(mktemp -d "${TMPDIR:-/tmp}/convert_bench.XXXXXX")"
trap 'rm -rf "${dir}"' EXIT

python3 - "${dir}" "${gib}" <<'PY'
import json, os, struct, sys
d, gib = sys.argv[1], float(sys.argv[2])
total = int(gib * (1 << 30))
n = 16
per = total // n // 16384 * 16384
# safetensors: 16 F32 tensors of [rows, 4096].
hdr = {f"t{i}": {"dtype": "F32", "shape": [per // 16384, 4096],
                 "data_offsets": [i * per, (i + 1) * per]} for i in range(n)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
import random
random.seed(1)
# 1 MiB of finite float32 (random bytes would hold NaNs, which --quantize
# refuses), repeated.
chunk = struct.pack("<262144f", *(random.gauss(0, 1) for _ in range(262144)))
with open(f"{d}/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    left = per * n
    while left:
        k = min(left, len(chunk)); f.write(chunk[:k]); left -= k
# GGUF: 16 Q8_0 tensors of per/34 blocks (ne0 = 32 * 64).
def s(x): return struct.pack("<Q", len(x)) + x
blocks = per // 34 // 64 * 64
info = b""
off = 0
for i in range(n):
    info += s(f"t{i}".encode()) + struct.pack("<I", 2) + struct.pack("<QQ", 2048, blocks // 64) + struct.pack("<I", 8) + struct.pack("<Q", off)
    off += blocks * 34
    off += -off % 32
head = b"GGUF" + struct.pack("<IQQ", 3, n, 0) + info
head += b"\0" * (-len(head) % 32)
# One block pattern with a normal float16 scale (0x2C00 = 0.0625).
blk = struct.pack("<H", 0x2C00) + bytes((i * 37) & 0xFF for i in range(32))
unit = blk * 1024
with open(f"{d}/model.gguf", "wb") as f:
    f.write(head)
    for i in range(n):
        left = blocks
        while left:
            k = min(left, 1024); f.write(unit[:k * 34]); left -= k
        pad = -(blocks * 34) % 32
        f.write(b"\0" * pad)
PY

# Runs "$@" once: "<wall seconds> <peak RSS KiB>".
once() {
  rm -f "${dir}/out"
  /usr/bin/time -v -o "${dir}/time" "$@" >/dev/null
  awk -F': ' '/Elapsed/ {n = split($2, a, ":"); s = 0;
      for (i = 1; i <= n; i++) s = s * 60 + a[i]; t = s}
    /Maximum resident/ {r = $2} END {print t, r}' "${dir}/time"
  rm -f "${dir}/out"
}
# Keeps the faster of two "<seconds> <rss>" pairs.
faster() {
  awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ");
    if (a == "" || y[1] < x[1]) print b; else print a}'
}

sources=(model.safetensors model.gguf)
[[ "${ONLY:-}" == kquant ]] && sources=()
for src in "${sources[@]}"; do
  f="${dir}/${src}"
  cat "${f}" >/dev/null  # warm the page cache
  cp_best="" cv_best="" q_best=""
  # Interleaved, so that both see the same machine (other builds, dirty
  # page writeback); the best of RUNS each.
  for _ in $(seq "${runs}"); do
    cp_best="$(faster "${cp_best}" "$(once cp "${f}" "${dir}/out")")"
    cv_best="$(faster "${cv_best}" \
      "$(once "${hurray}" convert "${f}" -o "${dir}/out")")"
    if [[ -n "${QUANTIZE:-}" && "${src}" == model.safetensors ]]; then
      q_best="$(faster "${q_best}" "$(once "${hurray}" convert "${f}" \
        -o "${dir}/out" --quantize "${QUANTIZE}")")"
    fi
  done
  read -r cp_s cp_rss <<<"${cp_best}"
  size="$(stat -c %s "${f}")"
  report() {
    awk -v n="$1" -v sz="${size}" -v c="${cp_s}" -v v="$2" \
      -v rc="${cp_rss}" -v rv="$3" 'BEGIN {
        printf "%-28s %6.0f MiB  cp %.2f s (%.0f MiB/s, %d KiB RSS)  convert %.2f s (%.0f MiB/s, %d KiB RSS)  ratio %.2f\n",
          n, sz / 1048576, c, sz / 1048576 / c, rc, v, sz / 1048576 / v, rv, c / v }'
  }
  read -r cv_s cv_rss <<<"${cv_best}"
  report "${src}" "${cv_s}" "${cv_rss}"
  if [[ -n "${q_best}" ]]; then
    read -r q_s q_rss <<<"${q_best}"
    report "${src} --quantize ${QUANTIZE}" "${q_s}" "${q_rss}"
  fi
done

# K-quants (issue 48): a GIB GGUF file of 16 Q4_K tensors (re-blocked to
# uint8 codes on a finer step, approximate) and one of Q6_K (exact), made
# by bench/make_kquant_gguf.py, against `cp` of the same file: RUNS rounds
# alternating cp and convert; medians and ranges of the wall time and of
# the CPU time (user + system: on a machine shared with other work the wall
# time of the longer command grows more), and the largest peak RSS of the
# conversions. The same rounds time `dd` writing as many bytes as the
# conversion's output (from /dev/zero, 1 MiB writes) to the same file
# system: the cost of the output's size alone, which `cp` (copying in the
# kernel, and writing fewer bytes) does not pay; convert / dd is printed
# beside convert / cp. The order of the three commands rotates by round.
# KQUANT_FLAGS adds options to these conversions (e.g. --compact-kquants:
# Q4_K as uint4 codes, output about the input's size).
# Runs "$@" once: "<wall s> <peak RSS KiB> <user + system s>".
once_cpu() {
  rm -f "${dir}/out"
  /usr/bin/time -v -o "${dir}/time" "$@" >/dev/null
  awk -F': ' '/Elapsed/ {n = split($2, a, ":"); s = 0;
      for (i = 1; i <= n; i++) s = s * 60 + a[i]; t = s}
    /Maximum resident/ {r = $2} /User time/ {u = $2} /System time/ {y = $2}
    END {print t, r, u + y}' "${dir}/time"
  rm -f "${dir}/out"
}
for ktype in Q4_K Q6_K; do
  f="${dir}/${ktype}.gguf"
  /usr/bin/python3 bench/make_kquant_gguf.py "${f}" "${ktype}" \
    "$(awk -v g="${gib}" 'BEGIN {print g * 1024}')"
  cat "${f}" >/dev/null
  # shellcheck disable=SC2086  # KQUANT_FLAGS: words
  "${hurray}" convert ${KQUANT_FLAGS:-} "${f}" -o "${dir}/out" >/dev/null
  out_mib="$(( ($(stat -c %s "${dir}/out") + 1048575) / 1048576 ))"
  rm -f "${dir}/out"
  cp_t="" cv_t="" dd_t="" cp_c="" cv_c="" dd_c="" cv_rss=0 b_t="" b_c=""
  ncmd=3
  [[ -n "${BASELINE:-}" ]] && ncmd=4
  for round in $(seq "${runs}"); do
    for k in $(seq 0 $((ncmd - 1))); do
      case $(( (round + k) % ncmd )) in
        3) read -r t _ c <<<"$(once_cpu "${BASELINE}" convert ${KQUANT_FLAGS:-} "${f}" \
             -o "${dir}/out")"
           b_t="${b_t} ${t}" b_c="${b_c} ${c}" ;;
        0) read -r t _ c <<<"$(once_cpu cp "${f}" "${dir}/out")"
           cp_t="${cp_t} ${t}" cp_c="${cp_c} ${c}" ;;
        1) read -r t r c <<<"$(once_cpu "${hurray}" convert ${KQUANT_FLAGS:-} \
             "${f}" -o "${dir}/out")"
           cv_t="${cv_t} ${t}" cv_c="${cv_c} ${c}"
           ((r > cv_rss)) && cv_rss="${r}" ;;
        2) read -r t _ c <<<"$(once_cpu dd if=/dev/zero of="${dir}/out" \
             bs=1M count="${out_mib}" status=none)"
           dd_t="${dd_t} ${t}" dd_c="${dd_c} ${c}" ;;
      esac
    done
  done
  awk -v n="${ktype}" -v sz="$(stat -c %s "${f}")" -v c="${cp_t}" \
    -v v="${cv_t}" -v cc="${cp_c}" -v vc="${cv_c}" -v rss="${cv_rss}" \
    -v d="${dd_t}" -v dc="${dd_c}" -v om="${out_mib}" '
    function med(s, a,   k, i, j, t) {
      k = split(s, a, " ")
      for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
        if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      lo = a[1]; hi = a[k]
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    BEGIN {
      mc = med(c); cl = lo; ch = hi; mv = med(v); vl = lo; vh = hi
      printf "%-6s %5.0f MiB  wall: cp median %.2f s [%.2f, %.2f]  convert median %.2f s [%.2f, %.2f]  convert / cp %.2f\n",
        n, sz / 1048576, mc, cl, ch, mv, vl, vh, mv / mc
      mc = med(cc); cl = lo; ch = hi; mv = med(vc); vl = lo; vh = hi
      printf "%-6s %5s      CPU:  cp median %.2f s [%.2f, %.2f]  convert median %.2f s [%.2f, %.2f]  convert / cp %.2f  (%d KiB peak RSS)\n",
        n, "", mc, cl, ch, mv, vl, vh, mv / mc, rss
      cvw = med(v); cvc = med(vc); md = med(d); dl = lo; dh = hi
      printf "%-6s %5s      dd of the output (%d MiB): wall median %.2f s [%.2f, %.2f], convert / dd %.2f;",
        n, "", om, md, dl, dh, cvw / md
      md = med(dc); dl = lo; dh = hi
      printf " CPU median %.2f s [%.2f, %.2f], convert / dd %.2f\n",
        md, dl, dh, cvc / md }'
  if [[ -n "${b_t}" ]]; then
    # Per round: this build / BASELINE and each / cp (wall, then CPU).
    awk -v n="${ktype}" -v c="${cp_t}" -v v="${cv_t}" -v b="${b_t}" \
      -v cc="${cp_c}" -v vc="${cv_c}" -v bc="${b_c}" '
      function med(s, a,   k, i, j, t) {
        k = split(s, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
          if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[k]
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
      }
      function ratios(x, y,   p, q, k, i, r) {
        k = split(x, p, " "); split(y, q, " "); r = ""
        for (i = 1; i <= k; i++) r = r " " (q[i] > 0 ? p[i] / q[i] : 0)
        return r
      }
      BEGIN {
        m = med(b); bl = lo; bh = hi
        printf "%-6s %5s      BASELINE convert: wall median %.2f s [%.2f, %.2f]", n, "", m, bl, bh
        m = med(bc); printf ", CPU median %.2f s [%.2f, %.2f]\n", m, lo, hi
        m = med(ratios(v, b)); printf "%-6s %5s      after / before (same round): wall %.3f [%.3f, %.3f]", n, "", m, lo, hi
        m = med(ratios(vc, bc)); printf ", CPU %.3f [%.3f, %.3f]\n", m, lo, hi
        m = med(ratios(b, c)); printf "%-6s %5s      per-round / cp: before wall %.2f [%.2f, %.2f]", n, "", m, lo, hi
        m = med(ratios(v, c)); printf ", after wall %.2f [%.2f, %.2f]", m, lo, hi
        m = med(ratios(bc, cc)); printf "; before CPU %.2f [%.2f, %.2f]", m, lo, hi
        m = med(ratios(vc, cc)); printf ", after CPU %.2f [%.2f, %.2f]\n", m, lo, hi }'
  fi
  rm -f "${f}"
done
