#!/usr/bin/env bash
# Many connections (issue 47 item 2): validate-only `hurray ingest URL
# --connections N` against Debian's nginx on loopback over plain HTTP, with
# every connection capped as a CDN caps a flow (`limit_rate`, default
# 32m bytes/s) and uncapped, measured in one run in alternating rounds:
#   capped_n1     hurray ingest URL                  (one connection)
#   capped_n8     hurray ingest URL --connections 8
#   capped_aria2  aria2c -x8 -s8 -k1M --file-allocation=none, to tmpfs
#                 (/dev/shm; Debian's aria2: `apt-get install -y aria2`;
#                 skipped when aria2c is absent)
#   uncapped_n1, uncapped_n8   the same two ingests without the cap
# Per round the ratios capped_n8 / capped_aria2 (target <= 1.15),
# capped_n8 / capped_n1 (target <= 1/6 = 0.167) and uncapped_n8 /
# uncapped_n1 (target <= 1.05); printed: the median and range of each case
# and ratio over the rounds, the CPU and the load average.
#
#   bench/http_connections_bench.sh    (from the workspace root)
# Environment: ROUNDS (5), BENCH_BYTES (268435456), RATE (32m).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-5}"
bytes="${BENCH_BYTES:-268435456}"
rate="${RATE:-32m}"
bazel build -c opt //tools:hurray //bench:ingest_bench >/dev/null 2>&1
hurray="$(pwd)/bazel-out/k8-opt/bin/tools/hurray"
gen="$(pwd)/bazel-out/k8-opt/bin/bench/ingest_bench"
source tools/testing/nginx_loopback.sh
work="$(mktemp -d "${TMPDIR:-/tmp}/http_connections_bench_XXXXXX")"
shm="$(mktemp -d /dev/shm/http_connections_bench_XXXXXX)"
trap 'nginx_stop; rm -rf "${work}" "${shm}"' EXIT
mkdir -p "${work}/www"
size="$(HURRAY_INGEST_BENCH_BYTES="${bytes}" "${gen}" --generate "${work}/www/bench.hrry")"
nginx_start "${work}" "${work}/www" "
    location /capped/ { alias ${work}/www/; limit_rate ${rate}; }
" >/dev/null
base="http://127.0.0.1:${NGINX_HTTP_PORT}"
cat "${work}/www/bench.hrry" >/dev/null # in the page cache for everyone

aria2=1
if ! command -v aria2c >/dev/null; then
  aria2=0
  echo "aria2c absent (apt-get install -y aria2): capped_aria2 skipped" >&2
fi

now() { date +%s.%N; }
# Prints the seconds one case took; fails the bench if the command does.
timed() {
  local t0 t1
  t0="$(now)"
  "$@" >/dev/null 2>"${work}/stderr" || {
    echo "failed: $* ($(cat "${work}/stderr"))" >&2
    exit 1
  }
  t1="$(now)"
  echo "${t1} - ${t0}" | bc -l
}
ingest() { timed "${hurray}" ingest "$@"; }
aria() {
  rm -f "${shm}/bench.hrry"
  timed aria2c -q -x8 -s8 -k1M --file-allocation=none --allow-overwrite=true \
    -d "${shm}" -o bench.hrry "$1"
  cmp -s "${shm}/bench.hrry" "${work}/www/bench.hrry" || {
    echo "aria2c: the file differs" >&2
    exit 1
  }
  rm -f "${shm}/bench.hrry"
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
results="${work}/results"
: >"${results}"
for r in $(seq "${rounds}"); do
  # Alternating: the order of the cases flips every round.
  cases=(capped_n1 capped_n8 capped_aria2 uncapped_n1 uncapped_n8)
  if ((r % 2 == 0)); then
    cases=(uncapped_n8 uncapped_n1 capped_aria2 capped_n8 capped_n1)
  fi
  for c in "${cases[@]}"; do
    case "${c}" in
      capped_n1) t="$(ingest "${base}/capped/bench.hrry")" ;;
      capped_n8) t="$(ingest "${base}/capped/bench.hrry" --connections 8)" ;;
      capped_aria2)
        [[ "${aria2}" == 1 ]] || continue
        t="$(aria "${base}/capped/bench.hrry")"
        ;;
      uncapped_n1) t="$(ingest "${base}/bench.hrry")" ;;
      uncapped_n8) t="$(ingest "${base}/bench.hrry" --connections 8)" ;;
    esac
    echo "${r} ${c} ${t}" >>"${results}"
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
fam="$(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //')"
model="$(grep -m1 '^model\s' /proc/cpuinfo | sed 's/.*: //')"
printf 'file: %s bytes, %s rounds (alternating), limit_rate %s per connection, nginx %s\n' \
  "${size}" "${rounds}" "${rate}" "$("${NGINX_BIN}" -v 2>&1 | sed 's/.*\///')"
printf 'CPU: %s (family %s model %s), %s vCPUs; load average before %s, after %s\n' \
  "${cpu}" "${fam}" "${model}" "$(nproc)" "${load_before}" "${load_after}"
/usr/bin/python3 - "${results}" "${size}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
size = int(sys.argv[2])
by = {}
for r, c, t in rows:
    by.setdefault(c, {})[int(r)] = float(t)
def line(name, vals, unit, extra=""):
    print("%-28s median %8.3f%s  range [%.3f, %.3f]%s" %
          (name, statistics.median(vals), unit, min(vals), max(vals), extra))
for c in ["capped_n1", "capped_n8", "capped_aria2", "uncapped_n1", "uncapped_n8"]:
    if c in by:
        v = list(by[c].values())
        line(c, v, " s", "  %.0f MB/s" % (size / statistics.median(v) / 1e6))
def ratio(a, b, target):
    if a not in by or b not in by:
        return
    v = [by[a][r] / by[b][r] for r in by[a] if r in by[b]]
    line("%s / %s" % (a, b), v, "  ", "  target <= %s" % target)
ratio("capped_n8", "capped_aria2", "1.15")
ratio("capped_n8", "capped_n1", "0.167 (1/6)")
ratio("uncapped_n8", "uncapped_n1", "1.05")
PY
