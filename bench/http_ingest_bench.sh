#!/usr/bin/env bash
# The HTTPS case of the ingest benchmark (issue 15): a .hrry file
# (HURRAY_INGEST_BENCH_BYTES, default 1 GiB) served by Debian's nginx on
# loopback over TLS (tools/testing/nginx_loopback.sh), measured in one run:
#   curl          `curl -s -o /dev/null` of the URL (the anchor a user
#                 compares with)
#   cpu_dequant   decode + validate + dequantize from memory (mapped,
#                 pre-faulted file, no output written)
#   https_validate  the loader over HttpBody, validate-only sink
#   https_dequant   ... dequantizing sink (output discarded, as cpu_dequant)
# Ratios: https_validate / curl (target <= 1.1), https_dequant /
# max(curl, cpu_dequant) (target <= 1.15); peak RSS of each https run
# (getrusage of the process, target <= 64 MiB). Each case runs REPEAT
# times (default 3); the best time counts.
#
# Before/after a change: BEFORE_BIN=path/to/an/older/ingest_bench runs both
# binaries against the same server in ROUNDS alternating rounds (A B, B A,
# ...) and prints, for https_validate and https_dequant, the median and
# range of after/before within a round.
#
#   bench/http_ingest_bench.sh      (from the workspace root)
#   BEFORE_BIN=/tmp/old/ingest_bench ROUNDS=8 bench/http_ingest_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repeat="${REPEAT:-3}"
bazel build -c opt //bench:ingest_bench >/dev/null 2>&1
bench="$(pwd)/bazel-out/k8-opt/bin/bench/ingest_bench"
source tools/testing/nginx_loopback.sh
work="$(mktemp -d "${TMPDIR:-/tmp}/http_ingest_bench_XXXXXX")"
trap 'nginx_stop; rm -rf "${work}"' EXIT
mkdir -p "${work}/www"
size="$("${bench}" --generate "${work}/www/bench.hrry")"
nginx_start "${work}" "${work}/www" >/dev/null
url="https://127.0.0.1:${NGINX_HTTPS_PORT}/bench.hrry"
cat "${work}/www/bench.hrry" >/dev/null  # in the page cache for everyone

best() { sort -g | head -1; }

if [[ -n "${BEFORE_BIN:-}" ]]; then
  rounds="${ROUNDS:-8}"
  one() { "$1" --http "$2" "${url}" "${NGINX_CERT}" | awk '{print $1}'; }
  for mode in validate dequant; do
    ratios=()
    for r in $(seq "${rounds}"); do
      if ((r % 2)); then
        a="$(one "${BEFORE_BIN}" "${mode}")"; b="$(one "${bench}" "${mode}")"
      else
        b="$(one "${bench}" "${mode}")"; a="$(one "${BEFORE_BIN}" "${mode}")"
      fi
      ratios+=("$(echo "${b} / ${a}" | bc -l)")
    done
    printf '%s\n' "${ratios[@]}" | sort -g | awk -v m="https_${mode}" \
      '{v[NR] = $1} END {
         med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
         printf "%-16s after/before %.3f [%.3f-%.3f], %d rounds\n",
                m, med, v[1], v[NR], NR }'
  done
  exit 0
fi
time_curl() {
  local t0 t1
  t0="$(date +%s.%N)"
  curl -s -o /dev/null --cacert "${NGINX_CERT}" "${url}"
  t1="$(date +%s.%N)"
  echo "${t1} - ${t0}" | bc -l
}
curl_t="$(for i in $(seq "${repeat}"); do time_curl; done | best)"
cpu_t="$(for i in $(seq "${repeat}"); do
  "${bench}" --cpu dequant "${work}/www/bench.hrry"; done | best)"
runs_v="$(for i in $(seq "${repeat}"); do
  "${bench}" --http validate "${url}" "${NGINX_CERT}"; done)"
runs_d="$(for i in $(seq "${repeat}"); do
  "${bench}" --http dequant "${url}" "${NGINX_CERT}"; done)"
val_t="$(echo "${runs_v}" | awk '{print $1}' | best)"
val_rss="$(echo "${runs_v}" | awk '{print $2}' | sort -g | tail -1)"
deq_t="$(echo "${runs_d}" | awk '{print $1}' | best)"
deq_rss="$(echo "${runs_d}" | awk '{print $2}' | sort -g | tail -1)"
base_d="$(echo "if (${curl_t} > ${cpu_t}) ${curl_t} else ${cpu_t}" | bc -l)"
mb() { echo "scale=1; ${size} / $1 / 1000000" | bc -l; }
printf 'file: %s bytes, best of %s, nginx %s\n' "${size}" "${repeat}" \
  "$("${NGINX_BIN}" -v 2>&1 | sed 's/.*\///')"
printf '%-16s %8.3f s %8s MB/s\n' curl "${curl_t}" "$(mb "${curl_t}")"
printf '%-16s %8.3f s %8s MB/s\n' cpu_dequant "${cpu_t}" "$(mb "${cpu_t}")"
printf '%-16s %8.3f s %8s MB/s  ratio %.3f (vs curl)  peak RSS %.1f MiB\n' \
  https_validate "${val_t}" "$(mb "${val_t}")" \
  "$(echo "${val_t} / ${curl_t}" | bc -l)" "$(echo "${val_rss} / 1024" | bc -l)"
printf '%-16s %8.3f s %8s MB/s  ratio %.3f (vs max(curl, cpu_dequant))  peak RSS %.1f MiB\n' \
  https_dequant "${deq_t}" "$(mb "${deq_t}")" \
  "$(echo "${deq_t} / ${base_d}" | bc -l)" "$(echo "${deq_rss} / 1024" | bc -l)"
