#!/usr/bin/env bash
# Writing outputs (issue 47 item 1): `hurray ingest FILE --dequant OUT` on
# tmpfs and on the disk against what bounds it, in one run of alternating
# rounds (each round runs every case once, the order rotated from round to
# round):
#   dd            `dd if=/dev/zero bs=1M` of the same output byte count to
#                 the same filesystem (what the filesystem takes)
#   dequant       the dequantization alone: `ingest_bench --cpu dequant`
#                 (decode + validate + dequantize from a mapped, pre-faulted
#                 file, nothing written; its own timer)
#   ingest        this tree's `hurray ingest FILE --dequant OUT`
#   ingest_base   the same with a baseline binary: BASE_REV=<git rev> builds
#                 that revision's //tools:hurray from `git archive` in a
#                 temp dir (the shared disk cache makes that quick), or
#                 BASE_HURRAY=<path to a binary>; none: not run
# The input is ingest_bench's file (HURRAY_INGEST_BENCH_BYTES, default
# 512 MiB: per-channel int8 and per-block int4 tensors, ~5.6x as many bytes
# of .npy), in the page cache. Outputs are removed (and `sync`ed on the disk)
# between cases, outside the timings.
# HTTPS=1 adds the input served over TLS by Debian's nginx on loopback
# (tools/testing/nginx_loopback.sh) and two cases:
#   curl          `curl -s -o /dev/null` of the URL (the input's own cost)
#   ingest_https  `hurray ingest URL --ca-file PEM --dequant OUT`
# with the ratio ingest_https / max(curl, dd, dequant) per round.
# Printed: per case the median wall time
# [min-max], median user and system CPU, the largest peak RSS; per round the
# ratio ingest / max(dd, dequant) of that round, median [min-max] (target
# <= 1.15), and ingest / ingest_base.
#
#   bench/write_outputs_bench.sh            (from the workspace root)
#   ROUNDS=7 TMPFS_DIR=/dev/shm DISK_DIR=/tmp BASE_REV=main bench/write_outputs_bench.sh
#   HTTPS=1 ROUNDS=9 bench/write_outputs_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-5}"
tmpfs_dir="${TMPFS_DIR:-/dev/shm}"
disk_dir="${DISK_DIR:-/tmp}"
work="$(mktemp -d "${disk_dir}/write_outputs_bench_XXXXXX")"
base_src=""
https="${HTTPS:-}"
cleanup() {
  if [[ -n "${https}" ]]; then nginx_stop; fi
  rm -rf "${work}" "${tmpfs_dir}/write_outputs_bench_$$"
  if [[ -n "${base_src}" ]]; then
    (cd "${base_src}" && bazel shutdown >/dev/null 2>&1 || true)
    rm -rf "${base_src}"
  fi
}
trap cleanup EXIT

bazel build -c opt //tools:hurray //bench:ingest_bench >/dev/null 2>&1
cp bazel-bin/tools/hurray "${work}/hurray"
cp bazel-bin/bench/ingest_bench "${work}/ingest_bench"
base="${BASE_HURRAY:-}"
if [[ -n "${BASE_REV:-}" ]]; then
  base_src="$(mktemp -d "${TMPDIR:-/tmp}/write_outputs_base_XXXXXX")"
  git archive "${BASE_REV}" | tar -x -C "${base_src}"
  (cd "${base_src}" && bazel build -c opt //tools:hurray >/dev/null 2>&1)
  cp "${base_src}/bazel-bin/tools/hurray" "${work}/hurray_base"
  base="${work}/hurray_base"
fi

in="${work}/in.hrry"
"${work}/ingest_bench" --generate "${in}" >/dev/null
# Untimed: the input into the page cache, and the output's byte count.
warm="${tmpfs_dir}/write_outputs_bench_$$"
"${work}/hurray" ingest "${in}" --dequant "${warm}" >/dev/null
out_bytes="$(du -sb "${warm}" | cut -f1)"
if [[ -n "${https}" ]]; then
  source tools/testing/nginx_loopback.sh
  mkdir -p "${work}/www"
  ln "${in}" "${work}/www/in.hrry"
  nginx_start "${work}" "${work}/www" >/dev/null
  url="https://127.0.0.1:${NGINX_HTTPS_PORT}/in.hrry"
fi
rm -rf "${warm}"
mib=$(((out_bytes + (1 << 20) - 1) >> 20))

results="${work}/results.tsv"
# run CASE FS COMMAND...: one timed run, appended to results.
run() {
  local case="$1" fs="$2"
  shift 2
  local t
  t="$({ /usr/bin/time -f '%e %U %S %M' "$@" >"${work}/stdout"; } 2>&1 |
    tail -1)"
  if [[ "${case}" == dequant ]]; then  # its own timer: no mapping, no faults
    t="$(cat "${work}/stdout") ${t#* }"
  fi
  printf '%s\t%s\t%s\t%s\n' "${round}" "${case}" "${fs}" "${t}" >>"${results}"
}
clean() {  # outside the timings
  rm -rf "$1"
  if [[ "$2" == disk ]]; then sync; fi
}
one() {
  local case="$1" fs="$2" dir
  if [[ "${fs}" == tmpfs ]]; then dir="${tmpfs_dir}"; else dir="${disk_dir}"; fi
  local out="${dir}/write_outputs_bench_$$"
  case "${case}" in
    dd) mkdir -p "${out}"
      run dd "${fs}" dd if=/dev/zero of="${out}/dd" bs=1M count="${mib}" \
        status=none ;;
    ingest) run ingest "${fs}" "${work}/hurray" ingest "${in}" --dequant "${out}" ;;
    ingest_https) run ingest_https "${fs}" "${work}/hurray" ingest "${url}" \
      --ca-file "${NGINX_CERT}" --dequant "${out}" ;;
    ingest_base) run ingest_base "${fs}" "${base}" ingest "${in}" --dequant "${out}" ;;
  esac
  clean "${out}" "${fs}"
}
cases=(dd ingest)
if [[ -n "${base}" ]]; then cases+=(ingest_base); fi
if [[ -n "${https}" ]]; then cases+=(ingest_https); fi
for round in $(seq "${rounds}"); do
  run dequant - "${work}/ingest_bench" --cpu dequant "${in}"
  if [[ -n "${https}" ]]; then
    run curl - curl -s --cacert "${NGINX_CERT}" -o /dev/null "${url}"
  fi
  for fs in tmpfs disk; do
    n="${#cases[@]}"
    for i in $(seq 0 $((n - 1))); do
      one "${cases[$(((i + round) % n))]}" "${fs}"
    done
  done
done

printf 'input %s bytes, output %s bytes of .npy (dd: %s MiB); %s rounds\n' \
  "$(stat -c %s "${in}")" "${out_bytes}" "${mib}" "${rounds}"
printf 'tmpfs %s, disk %s (%s); CPU: %s, %s vCPU; load before/after: %s\n' \
  "${tmpfs_dir}" "${disk_dir}" "$(stat -f -c %T "${disk_dir}")" \
  "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${results}" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)  # (case, fs) -> [(round, wall, user, sys, rss)]
for line in open(sys.argv[1]):
    r, case, fs, t = line.rstrip("\n").split("\t")
    wall, user, sys_, rss = t.split()
    rows[(case, fs)].append((int(r), float(wall), float(user), float(sys_), int(rss)))
def med(xs): return statistics.median(xs)
print(f"{'case':<12} {'fs':<6} {'wall s median [min-max]':<26} {'user s':>7} {'sys s':>7} {'peak RSS MiB':>12}")
for (case, fs), v in sorted(rows.items()):
    w = [x[1] for x in v]
    print(f"{case:<12} {fs:<6} {med(w):6.3f} [{min(w):.3f}-{max(w):.3f}]      "
          f"{med([x[2] for x in v]):7.2f} {med([x[3] for x in v]):7.2f} "
          f"{max(x[4] for x in v) / 1024:12.1f}")
deq = {x[0]: x[1] for x in rows[("dequant", "-")]}
curl = {x[0]: x[1] for x in rows.get(("curl", "-"), [])}
for fs in ("tmpfs", "disk"):
    dd = {x[0]: x[1] for x in rows[("dd", fs)]}
    if ("ingest_https", fs) in rows:
        rs = [x[1] / max(curl[x[0]], dd[x[0]], deq[x[0]])
              for x in rows[("ingest_https", fs)]]
        print(f"{fs:<6} ingest_https / max(curl, dd, dequant): median "
              f"{med(rs):.3f} [{min(rs):.3f}-{max(rs):.3f}]")
    for case in ("ingest", "ingest_base"):
        if (case, fs) not in rows: continue
        rs = [x[1] / max(dd[x[0]], deq[x[0]]) for x in rows[(case, fs)]]
        print(f"{fs:<6} {case:<12} / max(dd, dequant): median {med(rs):.3f} "
              f"[{min(rs):.3f}-{max(rs):.3f}]")
    if ("ingest_base", fs) in rows:
        base = {x[0]: x[1] for x in rows[("ingest_base", fs)]}
        rs = [x[1] / base[x[0]] for x in rows[("ingest", fs)]]
        print(f"{fs:<6} ingest / ingest_base: median {med(rs):.3f} "
              f"[{min(rs):.3f}-{max(rs):.3f}]")
EOF
