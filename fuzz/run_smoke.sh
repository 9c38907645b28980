#!/usr/bin/env bash
# Usage: fuzz/run_smoke.sh TARGET SECONDS
#
# CI smoke run of one fuzz target (e.g. descriptor_decode_fuzz): builds it
# with fuzz/oss-fuzz/build.sh (clang 14, libFuzzer, ASan + UBSan), fuzzes a temporary
# copy of corpus/TARGET/ for SECONDS with the target's dictionary, and exits
# non-zero if the run crashed (crash, sanitizer report, failed property,
# timeout, out of memory) or could not start. The committed corpus is never
# written. Crash inputs are kept in fuzz/findings/TARGET/ (git-ignored).
# FUZZ_CORPUS=DIR starts from DIR instead of corpus/TARGET/.
# FUZZ_PACKAGE=PKG builds //PKG:TARGET (default fuzz; e.g. capi).
# FUZZ_OUT=DIR takes DIR/TARGET and DIR/TARGET.dict (the $OUT of an earlier
# fuzz/oss-fuzz/build.sh) instead of building it.
# FUZZ_SEED=N (default 1) fixes libFuzzer's seed, so a CI run repeats the
# same mutations and a red smoke reproduces; 0 draws a new seed (campaigns,
# fuzz/campaign.sh, are where new inputs are searched for).
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 2 ]]; then
  echo "usage: $0 TARGET SECONDS" >&2
  exit 2
fi
target="$1"
seconds="$2"
pkg="${FUZZ_PACKAGE:-fuzz}"
corpus="${FUZZ_CORPUS:-corpus/${target}}"
if [[ ! -d "${corpus}" ]]; then
  echo "run_smoke: no ${corpus}/" >&2
  exit 2
fi

# The fuzzer and its dictionary as fuzz/oss-fuzz/build.sh lays them out:
# FUZZ_OUT is its $OUT (tools/test.sh builds every target once, then runs
# the smokes side by side); without it, this target is built into a
# temporary one, in the environment of fuzz/oss-fuzz/local_env.sh.
out="${FUZZ_OUT:-}"
own_out=""
if [[ -z "${out}" ]]; then
  out="$(mktemp -d)"
  own_out="${out}"
  trap 'rm -rf "${own_out}"' EXIT
  (source fuzz/oss-fuzz/local_env.sh && OUT="${out}" \
    bash fuzz/oss-fuzz/build.sh "//${pkg}:${target}") || exit 1
fi
bin="${out}/${target}"
[[ -x "${bin}" ]] || { echo "run_smoke: no ${bin}" >&2; exit 1; }
dict_args=()
[[ -f "${out}/${target}.dict" ]] && dict_args=("-dict=${out}/${target}.dict")

work="$(mktemp -d)"
trap 'rm -rf "${work}" ${own_out:+"${own_out}"}' EXIT
mkdir -p "${work}/corpus" "${work}/artifacts"
cp -R "${corpus}/." "${work}/corpus/"

export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

echo "run_smoke: ${target} for ${seconds}s from $(ls "${work}/corpus" | wc -l) seeds"
timeout $((seconds + 300)) "${bin}" "${dict_args[@]}" \
  -seed="${FUZZ_SEED:-1}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="${work}/artifacts/" \
  "${work}/corpus" 2>&1 | tee "${work}/fuzz.log" | grep -vE '^#[0-9]+.*(NEW|REDUCE|pulse)'
rc=${PIPESTATUS[0]}

if [[ ${rc} -ne 0 ]] || [[ -n "$(ls -A "${work}/artifacts")" ]]; then
  keep="fuzz/findings/${target}/smoke-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "${keep}"
  cp -R "${work}/artifacts/." "${work}/fuzz.log" "${keep}/" 2>/dev/null
  echo "run_smoke: ${target} FAILED (exit ${rc}); inputs and log in ${keep}/" >&2
  echo "run_smoke: reproduce with: ${bin} ${keep}/<crash file>" >&2
  # A CI log may be all that is left of the run: print each input (up to
  # 64 KiB) so it can be rebuilt with base64 -d.
  for f in "${work}/artifacts"/*; do
    [[ -f "${f}" ]] || continue
    if [[ $(stat -c %s "${f}") -le 65536 ]]; then
      echo "run_smoke: $(basename "${f}") base64: $(base64 -w0 "${f}")" >&2
    fi
  done
  exit 1
fi
echo "run_smoke: ${target} OK"
