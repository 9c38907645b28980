# Sourced by tools/test.sh and fuzz/run_smoke.sh: the environment OSS-Fuzz
# gives build.sh, emulated with Debian's clang 14 and libstdc++. One build
# carries both sanitizers (OSS-Fuzz builds address and undefined apart; one
# build keeps CI's time), with every UBSan check fatal as before.
export CC="${CC_FOR_FUZZ:-clang-14}"
export CXX="${CXX_FOR_FUZZ:-clang++-14}"
export SANITIZER="address-undefined"
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined"
flags+=" -fsanitize-address-use-after-scope -fno-sanitize-recover=all"
flags+=" -fsanitize=fuzzer-no-link"
export CFLAGS="${flags}"
export CXXFLAGS="${flags}"
export LIB_FUZZING_ENGINE="-fsanitize=fuzzer"
# CI checks our code strictly in this build too (bazel_args.sh).
export HURRAY_STRICT_WARNINGS=1
export SRC="${SRC:-$(pwd)}"
export WORK="${WORK:-${TMPDIR:-/tmp}}"
unset flags
