#!/usr/bin/env bash
# Usage: fuzz/run_smoke.sh TARGET SECONDS
#
# CI smoke run of one fuzz target (e.g. descriptor_decode_fuzz): builds it
# with --config=fuzz (clang 14, libFuzzer, ASan + UBSan), fuzzes a temporary
# copy of corpus/TARGET/ for SECONDS with the target's dictionary, and exits
# non-zero if the run crashed (crash, sanitizer report, failed property,
# timeout, out of memory) or could not start. The committed corpus is never
# written. Crash inputs are kept in fuzz/findings/TARGET/ (git-ignored).
# FUZZ_CORPUS=DIR starts from DIR instead of corpus/TARGET/.
# FUZZ_PACKAGE=PKG builds //PKG:TARGET (default fuzz; e.g. capi).
# FUZZ_BIN_DIR=DIR takes DIR/PKG/TARGET instead of building it.
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

# The dictionary: fuzz/<target>.dict, fuzz/<thing>.dict (target without
# _fuzz) or fuzz/<first word>.dict (descriptor_*_fuzz -> descriptor.dict).
dict_args=()
for d in "${pkg}/${target}.dict" "fuzz/${target}.dict" "fuzz/${target%_fuzz}.dict" \
  "fuzz/${target%%_*}.dict"; do
  if [[ -f "${d}" ]]; then
    dict_args=("-dict=${d}")
    break
  fi
done

# FUZZ_BIN_DIR: the bazel-bin of an earlier `bazel build --config=fuzz`
# of this target (tools/test.sh builds every target once, then runs the
# smokes side by side without the Bazel server's lock between them).
if [[ -n "${FUZZ_BIN_DIR:-}" ]]; then
  bin="${FUZZ_BIN_DIR}/${pkg}/${target}"
  [[ -x "${bin}" ]] || { echo "run_smoke: no ${bin}" >&2; exit 1; }
else
  bazel build --config=fuzz "//${pkg}:${target}" || exit 1
  bin="$(bazel info --config=fuzz bazel-bin)/${pkg}/${target}"
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
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
