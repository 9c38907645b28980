#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script: builds every fuzz target of the
# tree (the cc_binary rules tagged "fuzz_target" in fuzz/ and capi/) with the
# compiler, flags, sanitizer and engine the caller sets, and lays them out as
# OSS-Fuzz expects:
#   $OUT/<target>                    the fuzzer
#   $OUT/<target>_seed_corpus.zip    corpus/<target>/ (the committed seeds)
#   $OUT/<target>.dict               its dictionary, where it has one (a
#                                    dictionary shared by several targets is
#                                    copied under each target's name)
#   $OUT/<target>.options            where fuzz/ has one
#
# Environment (as OSS-Fuzz sets it): CC, CXX, CFLAGS, CXXFLAGS,
# LIB_FUZZING_ENGINE, SANITIZER (address, undefined, ...), OUT; SRC and WORK
# are accepted and not needed (the tree is found from this script's place).
# HURRAY_DEPS_LIBCXX=1: the C++ dependencies were built with libc++ (see
# README.md here); otherwise -stdlib=libc++ is dropped from CXXFLAGS, since
# Debian's Abseil and Highway are libstdc++ builds.
#
# Usage: fuzz/oss-fuzz/build.sh [//PKG:TARGET...]   (default: every target)
# tools/test.sh runs it with the environment of fuzz/oss-fuzz/local_env.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

for var in CC CXX CFLAGS CXXFLAGS LIB_FUZZING_ENGINE SANITIZER OUT; do
  [[ -n "${!var+x}" ]] || { echo "build.sh: ${var} is not set" >&2; exit 2; }
done
mkdir -p "${OUT}"

if [[ "${CXXFLAGS}" == *-stdlib=libc++* && "${HURRAY_DEPS_LIBCXX:-0}" != 1 ]]; then
  echo "build.sh: dropping -stdlib=libc++ (Debian's Abseil and Highway are" \
    "libstdc++ builds; fuzz/oss-fuzz/README.md)" >&2
  CXXFLAGS="${CXXFLAGS//-stdlib=libc++/}"
fi

# The flags as Bazel options (bazel_args.sh). The engine and the sanitizers'
# runtimes come with the link: -fsanitize=fuzzer-no-link instruments,
# $LIB_FUZZING_ENGINE provides main() (//third_party:fuzz_main adds nothing
# under hurray_fuzz=external).
source fuzz/oss-fuzz/bazel_args.sh
args=("${compile_args[@]}" "${link_args[@]}" "--define=hurray_fuzz=external")
for f in ${LIB_FUZZING_ENGINE}; do args+=("--linkopt=${f}"); done

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(bazel query \
    'attr(tags, "fuzz_target", //fuzz:all + //capi:all)' 2>/dev/null)
fi
[[ ${#targets[@]} -gt 0 && -n "${targets[0]}" ]] ||
  { echo "build.sh: no fuzz targets found" >&2; exit 1; }

bazel build "${args[@]}" "${targets[@]}"
bin="$(bazel info "${args[@]}" bazel-bin 2>/dev/null)"

for target in "${targets[@]}"; do
  name="${target##*:}"
  pkg="${target%%:*}"
  pkg="${pkg#//}"
  install -m 755 "${bin}/${pkg}/${name}" "${OUT}/${name}"
  rm -f "${OUT}/${name}_seed_corpus.zip"
  if [[ -d "corpus/${name}" ]]; then
    (cd "corpus/${name}" && find . -type f -printf '%P\n' | sort |
      python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for line in sys.stdin:
        z.write(line.rstrip("\n"))' "${OUT}/${name}_seed_corpus.zip")
  fi
  # The dictionary: PKG/<target>.dict, fuzz/<target>.dict,
  # fuzz/<target without _fuzz>.dict or fuzz/<first word>.dict
  # (descriptor_*_fuzz -> descriptor.dict).
  rm -f "${OUT}/${name}.dict"
  for d in "${pkg}/${name}.dict" "fuzz/${name}.dict" "fuzz/${name%_fuzz}.dict" \
    "fuzz/${name%%_*}.dict"; do
    if [[ -f "${d}" ]]; then
      install -m 644 "${d}" "${OUT}/${name}.dict"
      break
    fi
  done
  for o in "${pkg}/${name}.options" "fuzz/${name}.options"; do
    if [[ -f "${o}" ]]; then
      install -m 644 "${o}" "${OUT}/${name}.options"
      break
    fi
  done
done
echo "build.sh: ${#targets[@]} fuzz targets in ${OUT}"
