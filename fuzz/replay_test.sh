#!/usr/bin/env bash
# Usage: replay_test.sh FUZZ_BINARY SEED...
# Runs every seed once through a fuzz target: the standalone replayer in the
# default config (//third_party:fuzz_main), libFuzzer under --config=fuzz
# (file arguments are executed, not fuzzed). Fails on a non-zero exit (a
# crash, an abort from a failed property), on any sanitizer report (also a
# recoverable one), or when not every seed ran. Under Bazel test sharding
# each shard replays its share of the seeds.
set -uo pipefail
fuzzer="$1"
shift
if [[ $# -eq 0 ]]; then
  echo "replay_test: no seeds given" >&2
  exit 1
fi
# Sharded by Bazel (shard_count): this shard takes every TOTAL-th seed.
if [[ -n "${TEST_TOTAL_SHARDS:-}" ]]; then
  [[ -n "${TEST_SHARD_STATUS_FILE:-}" ]] && touch "${TEST_SHARD_STATUS_FILE}"
  mine=()
  i=0
  for seed in "$@"; do
    ((i % TEST_TOTAL_SHARDS == TEST_SHARD_INDEX)) && mine+=("${seed}")
    i=$((i + 1))
  done
  set -- "${mine[@]}"
  if [[ $# -eq 0 ]]; then
    echo "replay_test: shard ${TEST_SHARD_INDEX}: no seeds"
    exit 0
  fi
fi
log="${TEST_TMPDIR:-$(mktemp -d)}/replay.log"
"${fuzzer}" "$@" >"${log}" 2>&1
rc=$?
if [[ ${rc} -ne 0 ]]; then
  cat "${log}"
  echo "replay_test: ${fuzzer##*/} exited with ${rc}" >&2
  exit 1
fi
if grep -qE 'ERROR: (Address|Leak|Memory|Thread|UndefinedBehavior)Sanitizer|runtime error:|fuzz property failed' "${log}"; then
  cat "${log}"
  echo "replay_test: sanitizer or property report" >&2
  exit 1
fi
# The standalone replayer reports how many inputs it ran.
if ran=$(grep -oE 'ran [0-9]+ input' "${log}"); then
  if [[ "${ran}" != "ran $# input" ]]; then
    cat "${log}"
    echo "replay_test: expected $# inputs, got '${ran}'" >&2
    exit 1
  fi
fi
echo "replay_test: ${fuzzer##*/}: $# seeds OK"
