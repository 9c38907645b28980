#!/usr/bin/env bash
# The README's second command: install what is missing, build everything and
# run every test — the unit, rule, corpus and replay tests, the same suite
# under clang's AddressSanitizer + UndefinedBehaviorSanitizer (one build, the
# fuzz build's; the corpus replays are left to the next step, .bazelrc
# config oss_fuzz_tests), and a short libFuzzer smoke
# run of every fuzz target (clang ASan + UBSan) that first runs every seed
# of its committed corpus; last, the README's first command (tools/demo.sh).
# Idempotent.
#
# FUZZ_SECONDS (default 20) sets the smoke run per target; 0 skips it, and
# with it the only sanitized run of most fuzz corpora.
# FUZZ_JOBS (default: the number of CPUs) smokes run at a time.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/install_deps.sh || exit 1

log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
status=0

run() {
  echo "== $*"
  "$@" 2>&1 | tee -a "${log}"
  local rc=${PIPESTATUS[0]}
  [[ ${rc} -eq 0 ]] || status=1
}

run bazel test --keep_going //...
# The sanitized run: every test again under clang 14's ASan + UBSan, built
# with the fuzz build's own compiler and flags (fuzz/oss-fuzz/bazel_args.sh
# in the environment of fuzz/oss-fuzz/local_env.sh), so the fuzz build below
# links objects compiled here instead of compiling everything a third time.
# Our own files are compiled strictly in it (.bazelrc config strict_warnings:
# a dropped [[nodiscard]] result or an unused private field fails the build).
sanitized_tests() {
  (source fuzz/oss-fuzz/local_env.sh && source fuzz/oss-fuzz/bazel_args.sh &&
    bazel test --keep_going --config=oss_fuzz_tests "${compile_args[@]}" \
      "${link_args[@]}" //...)
}
run sanitized_tests

children() {
  if command -v pgrep >/dev/null; then
    pgrep -P "$1"
  else
    cat /proc/"$1"/task/*/children 2>/dev/null
  fi
}
tree() {
  local child
  echo "$1"
  for child in $(children "$1"); do tree "${child}"; done
}
# Stops every running job's whole process tree: frozen first (SIGSTOP), so
# no process reacts to a child's death or starts a new one, then TERM and
# CONT to all of them.
stop_smokes() {
  local pids=() job
  for job in $(jobs -rp); do mapfile -t -O "${#pids[@]}" pids < <(tree "${job}"); done
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -STOP "${pids[@]}" 2>/dev/null
    kill -TERM "${pids[@]}" 2>/dev/null
    kill -CONT "${pids[@]}" 2>/dev/null
  fi
  echo "tools/test.sh: interrupted; the fuzz smokes were stopped" >&2
  exit "$1"
}

findings=()
fuzz_seconds="${FUZZ_SECONDS:-20}"
if [[ "${fuzz_seconds}" != 0 ]]; then
  targets=()
  if listed="$(bazel query \
    'attr(tags, "fuzz_target", //fuzz:all + //capi:all)' 2>/dev/null)"; then
    mapfile -t targets <<<"${listed}"
  fi
  # Every target in one build (its compiles and links run in parallel) by
  # the OSS-Fuzz build script, in OSS-Fuzz's environment as emulated here
  # (fuzz/oss-fuzz/local_env.sh): one fuzz build path for CI and OSS-Fuzz.
  # Then the smokes side by side, one per core: each is one process.
  echo "== fuzz build: ${#targets[@]} targets (fuzz/oss-fuzz/build.sh)"
  fuzz_out=""
  if [[ ${#targets[@]} -lt 2 || -z "${targets[0]}" ]]; then
    echo "//fuzz:query FAILED (no fuzz targets found)" | tee -a "${log}"
    targets=()
  elif fuzz_out="$(mktemp -d)" && (source fuzz/oss-fuzz/local_env.sh &&
    OUT="${fuzz_out}" bash fuzz/oss-fuzz/build.sh "${targets[@]}"); then
    :
  else
    echo "//fuzz:build FAILED (fuzz/oss-fuzz/build.sh)" | tee -a "${log}"
    fuzz_out=""
  fi
  # The layout OSS-Fuzz expects: each fuzzer, and its seeds zipped.
  if [[ -n "${fuzz_out}" ]]; then
    layout=PASSED
    for target in "${targets[@]}"; do
      name="${target##*:}"
      [[ -x "${fuzz_out}/${name}" ]] || layout=FAILED
      [[ ! -d "corpus/${name}" || -s "${fuzz_out}/${name}_seed_corpus.zip" ]] ||
        layout=FAILED
    done
    echo "//fuzz/oss-fuzz:layout ${layout}" | tee -a "${log}"
  fi
  smoke_logs="$(mktemp -d)"
  trap 'rm -f "${log}"; rm -rf "${smoke_logs}" ${fuzz_out:+"${fuzz_out}"}' EXIT
  # Ctrl-C or TERM stops the smokes too: a script's background jobs ignore
  # SIGINT, and timeout(1) gives each fuzzer a process group of its own, so
  # each job's whole process tree is stopped here, children first.
  trap 'stop_smokes 130' INT
  trap 'stop_smokes 143' TERM
  parallel="${FUZZ_JOBS:-$(nproc)}"
  [[ "${parallel}" =~ ^[1-9][0-9]*$ ]] || parallel="$(nproc)"
  for target in "${targets[@]}"; do
    [[ -n "${fuzz_out}" ]] || break
    name="${target##*:}"
    pkg="${target%%:*}"
    pkg="${pkg#//}"
    while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
    (
      FUZZ_OUT="${fuzz_out}" FUZZ_PACKAGE="${pkg}" \
        bash fuzz/run_smoke.sh "${name}" "${fuzz_seconds}" \
        >"${smoke_logs}/${name}.log" 2>&1
      echo $? >"${smoke_logs}/${name}.rc"
    ) &
  done
  wait
  trap - INT TERM
  for target in "${targets[@]}"; do
    name="${target##*:}"
    pkg="${target%%:*}"
    pkg="${pkg#//}"
    echo "== fuzz smoke: //${pkg}:${name} (${fuzz_seconds}s)"
    cat "${smoke_logs}/${name}.log" 2>/dev/null
    if [[ "$(cat "${smoke_logs}/${name}.rc" 2>/dev/null)" == 0 ]]; then
      echo "//${pkg}:${name}_smoke PASSED" | tee -a "${log}"
    else
      echo "//${pkg}:${name}_smoke FAILED" | tee -a "${log}"
      status=1
      # Its inputs, for the closing lines (run_smoke.sh keeps them in the
      # folder it names: never an older run's).
      kept="$(sed -n 's/.*inputs and log in \(.*\)\/$/\1/p' \
        "${smoke_logs}/${name}.log" 2>/dev/null | tail -1)"
      [[ -n "${kept}" ]] || continue
      for f in "${kept}"/crash-* "${kept}"/leak-* "${kept}"/timeout-* \
        "${kept}"/oom-*; do
        [[ -f "${f}" && $(stat -c %s "${f}") -le 65536 ]] || continue
        findings+=("${name}: $(basename "${f}") base64: $(base64 -w0 "${f}")")
      done
    fi
  done
fi

# The install as consumers outside Bazel see it: tools/install.sh into a
# temporary prefix, a pkg-config and a CMake project built against it (its
# -c opt build is the one the demo below reuses).
echo "== install: tools/install_test.sh"
bash tools/install_test.sh 2>&1 | tee -a "${log}"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

# The README's first command, run as a newcomer runs it: it must never break
# unseen (it builds -c opt, packs, serves, ingests and loads with numpy).
echo "== demo: bash tools/demo.sh"
if bash tools/demo.sh; then
  echo "//tools:demo PASSED" | tee -a "${log}"
else
  echo "//tools:demo FAILED" | tee -a "${log}"
  status=1
fi

# One closing line for every test target run above (Bazel prints one
# "PASSED"/"FAILED" line per target and config).
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "${log}")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS)' "${log}")
echo
# Name what failed last, where a log's tail shows it.
grep -E '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS)' "${log}" | sed 's/^/failed: /'
for f in "${findings[@]}"; do echo "fuzz finding: ${f}"; done
echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]] || status=1
exit "${status}"
