#!/usr/bin/env bash
# Usage: fuzz/campaign.sh TARGET HOURS     (HOURS may be fractional: 0.5)
#
# Long fuzzing run of one target, then a merge of what it learned into the
# committed corpus:
#   1. builds //fuzz:TARGET (//$FUZZ_PACKAGE:TARGET, e.g. FUZZ_PACKAGE=capi)
#      with --config=fuzz (or takes it from $FUZZ_BIN_DIR);
#   2. fuzzes for HOURS in libFuzzer's fork mode with FUZZ_WORKERS parallel
#      workers (default: the number of CPUs, at most 2), continuing after
#      crashes, timeouts and OOMs (-ignore_*), so a long run is not ended by
#      the first finding. New inputs go to fuzz/findings/TARGET/<run>/corpus;
#      corpus/TARGET/ is only read;
#   3. merges with -merge=1: only the new inputs that add coverage to
#      corpus/TARGET/ are copied into it (review and commit them; then run
#      `bazel test //fuzz/...`);
#   4. lists the crash inputs, kept in fuzz/findings/TARGET/ (git-ignored):
#      minimize one with `<fuzzer> -minimize_crash=1 -runs=100000 FILE`;
#   5. appends one row to the ledger fuzz/CAMPAIGNS.md: wall time, CPU time
#      (user + system of the fork-mode parent and every worker it reaped, so
#      a run that shared the machine is not over-counted), executions, inputs
#      merged and crashes. Commit it with the corpus.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 2 ]]; then
  echo "usage: $0 TARGET HOURS" >&2
  exit 2
fi
target="$1"
seconds="$(awk -v h="$2" 'BEGIN { s = int(h * 3600); if (s < 1) s = 1; print s }')"
if [[ ! -d "corpus/${target}" ]]; then
  echo "campaign: no corpus/${target}/" >&2
  exit 2
fi
pkg="${FUZZ_PACKAGE:-fuzz}"
workers="${FUZZ_WORKERS:-$(nproc)}"
((workers > 2)) && [[ -z "${FUZZ_WORKERS:-}" ]] && workers=2

dict_args=()
for d in "${pkg}/${target}.dict" "fuzz/${target}.dict" "fuzz/${target%_fuzz}.dict" \
  "fuzz/${target%%_*}.dict"; do
  if [[ -f "${d}" ]]; then
    dict_args=("-dict=${d}")
    break
  fi
done

# FUZZ_BIN_DIR: a folder of already built fuzzers (e.g. copied out of
# bazel-bin), so that long chained campaigns do not contend for the Bazel
# server with other builds.
if [[ -n "${FUZZ_BIN_DIR:-}" ]]; then
  bin="${FUZZ_BIN_DIR}/${target}"
else
  bazel build --config=fuzz "//${pkg}:${target}" || exit 1
  bin="$(bazel info --config=fuzz bazel-bin)/${pkg}/${target}"
fi

findings="fuzz/findings/${target}"
run="${findings}/$(date +%Y%m%d-%H%M%S)"
mkdir -p "${run}/corpus"

export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

echo "campaign: ${target}, ${seconds}s, ${workers} workers; log ${run}/fuzz.log"
crashes_before=$(find "${findings}" -maxdepth 1 -type f | wc -l)
# Bash's `time` reports the rusage of the fuzzer, which includes every fork
# worker it waited for: that is the CPU the campaign really got.
TIMEFORMAT='%R %U %S'
{ time "${bin}" "${dict_args[@]}" -fork="${workers}" -ignore_crashes=1 \
  -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="${seconds}" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="${findings}/" \
  "${run}/corpus" "corpus/${target}" >"${run}/fuzz.log" 2>&1; } \
  2>"${run}/time"
echo "campaign: fuzzing ended; $(ls "${run}/corpus" | wc -l) new inputs"
read -r wall_s user_s sys_s <"${run}/time"
cpu_min="$(awk -v u="${user_s}" -v s="${sys_s}" 'BEGIN { printf "%.1f", (u + s) / 60 }')"
wall_min="$(awk -v w="${wall_s}" 'BEGIN { printf "%.1f", w / 60 }')"
# The last fork-mode status line: "#<executions>: cov: ... corp: ...".
execs="$(grep -o '^#[0-9]*' "${run}/fuzz.log" | tail -1 | tr -d '#')"
echo "campaign: ${wall_min} min wall, ${cpu_min} CPU-min, ${execs:-0} executions"

before=$(ls "corpus/${target}" | wc -l)
"${bin}" "${dict_args[@]}" -merge=1 \
  -merge_control_file="${run}/merge_control" \
  "corpus/${target}" "${run}/corpus" >"${run}/merge.log" 2>&1 ||
  echo "campaign: merge failed, see ${run}/merge.log" >&2
after=$(ls "corpus/${target}" | wc -l)
echo "campaign: merged $((after - before)) inputs into corpus/${target}/"

crashes_after=$(find "${findings}" -maxdepth 1 -type f | wc -l)
ledger="fuzz/CAMPAIGNS.md"
if [[ -f "${ledger}" ]]; then
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$(date -u +%Y-%m-%d)" "${target}" "${workers}" "${wall_min}" \
    "${cpu_min}" "${execs:-0}" "$((after - before))" \
    "$((crashes_after - crashes_before))" >>"${ledger}"
fi

crashes=$(find "${findings}" -maxdepth 1 -type f \
  \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) |
  sort)
if [[ -n "${crashes}" ]]; then
  echo "campaign: findings in ${findings}/:"
  echo "${crashes}" | sed 's/^/  /'
  exit 1
fi
echo "campaign: no crashes"
