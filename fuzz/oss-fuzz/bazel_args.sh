# Sourced by build.sh and tools/test.sh: the caller's compiler and flags
# (CC, CXX, CFLAGS, CXXFLAGS, SANITIZER, as OSS-Fuzz sets them) as Bazel
# options, in two arrays:
#   compile_args  the toolchain, the output directory and every compile flag
#   link_args     the sanitizers' runtimes (not the fuzzing engine)
# tools/test.sh builds and runs the tests with exactly these, so the fuzz
# build that follows (build.sh adds the engine and --define) finds every
# object of ours already compiled: link flags and --define do not enter a
# compile action's key.
compile_args=(
  "--platform_suffix=oss-fuzz-${SANITIZER}"
  "--repo_env=CC=${CC}"
  "--repo_env=CXX=${CXX}"
  "--copt=-DHURRAY_FUZZING"
  "--strip=never"
)
# Our code compiled strictly (.bazelrc config strict_warnings: a dropped
# [[nodiscard]] result or an unused private field is an error), where the
# caller asks; CI's emulation does, OSS-Fuzz's own builds need not.
if [[ "${HURRAY_STRICT_WARNINGS:-0}" == 1 ]]; then
  compile_args+=("--config=strict_warnings")
fi
# x86-64: SSE4.2 as the baseline, so Highway compiles no EMU128 or SSSE3
# kernels (the fallbacks for CPUs older than SSE4.2, which no fuzzing or CI
# host is). Under ASan + UBSan + coverage, the EMU128 target alone took 744 s
# of clang's CPU in dequant/simd_kernels.cc, most of the longest action of
# CI's sanitized build (bench/RESULTS.md, "CI's sanitized build"). The
# SSE4, AVX2, AVX3 and AVX3_DL kernels stay; the default (gcc) test run
# still checks EMU128 and SSSE3 against the reference
# (dequant/simd_equivalence_test.cc runs every target compiled).
if [[ "$(uname -m)" == x86_64 ]]; then
  compile_args+=("--copt=-msse4.2")
fi
for f in ${CFLAGS}; do compile_args+=("--conlyopt=${f}"); done
for f in ${CXXFLAGS}; do compile_args+=("--cxxopt=${f}"); done
link_args=()
for f in ${CXXFLAGS}; do
  case "${f}" in
    -fsanitize=fuzzer-no-link) ;;
    -fsanitize=* | -fno-sanitize-recover=*) link_args+=("--linkopt=${f}") ;;
  esac
done
# UBSan's vptr check needs the C++ half of its runtime; Bazel links with the
# C driver.
if [[ "${CXXFLAGS}" =~ -fsanitize=[^\ ]*(undefined|vptr) ]]; then
  link_args+=("--linkopt=-fsanitize-link-c++-runtime")
fi
unset f
