#!/bin/sh
# Usage: run_fuzz_replay.sh FUZZ_BINARY INPUT...
# Runs each input once through a libFuzzer-style binary. Works both for the
# real libFuzzer build (--config=fuzz: file args are executed, not fuzzed) and
# for the standalone driver (//third_party:fuzz_main otherwise).
set -eu
fuzzer="$1"
shift
exec "$fuzzer" "$@"
