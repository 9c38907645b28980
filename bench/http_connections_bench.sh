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
#   base_n1, base_n8  with BASELINE=PATH (another build of `hurray`, e.g.
#                 one copied from bazel-bin before a change): its uncapped
#                 N=1 and N=8 in the same rounds, for before/after ratios
# Per round the ratios capped_n8 / capped_aria2 (target <= 1.15),
# capped_n8 / capped_n1 (target <= 1/6 = 0.167) and uncapped_n8 /
# uncapped_n1 (target <= 1.05); printed: the median and range of each case
# and ratio over the rounds, the CPU and the load average.
#
# nginx's `limit_rate` is per request, with the first second's allowance
# free: a 1 MiB range request is never slowed by it, so by default the
# capped cases flatter many short requests. CAP=flow caps each TCP flow
# instead, as a CDN does, in the kernel (root only): an htb qdisc on the
# loopback device with 256 classes of RATE_BITS each, a packet from nginx's
# port going to the class of the low byte of the client's port (two flows
# share a class when their ports share a low byte: about one run in ten
# with 8 connections). It is set before each capped case and removed after
# it and on exit; nothing else on the machine should use loopback
# meanwhile. The capped cases then use the plain URL.
#
#   bench/http_connections_bench.sh    (from the workspace root)
#   CAP=flow RATE_BITS=256mbit bench/http_connections_bench.sh
# Environment: ROUNDS (5), BENCH_BYTES (268435456), RATE (32m), CAP
# (request | flow), RATE_BITS (256mbit: 32 MB/s, with CAP=flow), BASELINE
# (unset), CASES (every case; e.g. "uncapped_n1 uncapped_n8 base_n1
# base_n8" for the uncapped ones alone).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-5}"
bytes="${BENCH_BYTES:-268435456}"
rate="${RATE:-32m}"
cap="${CAP:-request}"
rate_bits="${RATE_BITS:-256mbit}"
baseline="${BASELINE:-}"
only="${CASES:-}"
bazel build -c opt //tools:hurray //bench:ingest_bench >/dev/null 2>&1
hurray="$(pwd)/bazel-out/k8-opt/bin/tools/hurray"
gen="$(pwd)/bazel-out/k8-opt/bin/bench/ingest_bench"
source tools/testing/nginx_loopback.sh
work="$(mktemp -d "${TMPDIR:-/tmp}/http_connections_bench_XXXXXX")"
shm="$(mktemp -d /dev/shm/http_connections_bench_XXXXXX)"
flow_cap() {  # flow_cap on|off
  [[ "${cap}" == flow ]] || return 0
  tc qdisc del dev lo root 2>/dev/null || true
  [[ "$1" == on ]] || return 0
  tc qdisc replace dev lo root handle 1: htb default 999 r2q 1000
  tc class add dev lo parent 1: classid 1:999 htb rate 100gbit
  local i
  for i in $(seq 0 255); do
    echo "class add dev lo parent 1: classid 1:$((i + 1)) htb" \
      "rate ${rate_bits} ceil ${rate_bits} burst 256k cburst 256k"
    echo "filter add dev lo parent 1: protocol ip prio 1 u32" \
      "match ip sport ${NGINX_HTTP_PORT} 0xffff match ip dport ${i} 0x00ff" \
      "flowid 1:$((i + 1))"
  done | tc -batch - 2>/dev/null
}
trap 'flow_cap off; nginx_stop; rm -rf "${work}" "${shm}"' EXIT
mkdir -p "${work}/www"
size="$(HURRAY_INGEST_BENCH_BYTES="${bytes}" "${gen}" --generate "${work}/www/bench.hrry")"
nginx_start "${work}" "${work}/www" "
    location /capped/ { alias ${work}/www/; limit_rate ${rate}; }
" >/dev/null
base="http://127.0.0.1:${NGINX_HTTP_PORT}"
capped_url="${base}/capped/bench.hrry"
[[ "${cap}" == flow ]] && capped_url="${base}/bench.hrry"
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
  cases=(capped_n1 capped_n8 capped_aria2 uncapped_n1 uncapped_n8 base_n1 base_n8)
  if ((r % 2 == 0)); then
    cases=(base_n8 base_n1 uncapped_n8 uncapped_n1 capped_aria2 capped_n8 capped_n1)
  fi
  for c in "${cases[@]}"; do
    [[ -z "${only}" || " ${only} " == *" ${c} "* ]] || continue
    [[ "${c}" != base_* || -n "${baseline}" ]] || continue
    [[ "${c}" == capped_* ]] && flow_cap on
    case "${c}" in
      capped_n1) t="$(ingest "${capped_url}")" ;;
      capped_n8) t="$(ingest "${capped_url}" --connections 8)" ;;
      capped_aria2)
        if [[ "${aria2}" != 1 ]]; then
          flow_cap off
          continue
        fi
        t="$(aria "${capped_url}")"
        ;;
      uncapped_n1) t="$(ingest "${base}/bench.hrry")" ;;
      uncapped_n8) t="$(ingest "${base}/bench.hrry" --connections 8)" ;;
      base_n1) t="$(timed "${baseline}" ingest "${base}/bench.hrry")" ;;
      base_n8) t="$(timed "${baseline}" ingest "${base}/bench.hrry" --connections 8)" ;;
    esac
    flow_cap off
    echo "${r} ${c} ${t}" >>"${results}"
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
fam="$(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //')"
model="$(grep -m1 '^model\s' /proc/cpuinfo | sed 's/.*: //')"
cap_text="limit_rate ${rate} per request"
[[ "${cap}" == flow ]] && cap_text="htb ${rate_bits} per TCP flow"
printf 'file: %s bytes, %s rounds (alternating), capped: %s, nginx %s\n' \
  "${size}" "${rounds}" "${cap_text}" "$("${NGINX_BIN}" -v 2>&1 | sed 's/.*\///')"
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
for c in ["capped_n1", "capped_n8", "capped_aria2", "uncapped_n1",
          "uncapped_n8", "base_n1", "base_n8"]:
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
ratio("base_n8", "base_n1", "1.05")
ratio("uncapped_n8", "base_n8", "1 (after / before)")
PY
