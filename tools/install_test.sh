#!/usr/bin/env bash
# The install as a consumer outside this Bazel tree sees it (run by
# tools/test.sh; Debian's cmake, pkg-config and cc):
#   - tools/install.sh into a fresh temporary prefix, twice (idempotent), and
#     under DESTDIR (staged: nothing outside it);
#   - the installed hurray --version, the library's SONAME and links;
#   - C programs built with `cc $(pkg-config --cflags --libs hurray)`:
#     capi/consumers/consumer.c and capi/examples/ingest.c;
#   - a CMake project: find_package(hurray) + hurray::hurray; a version it
#     cannot satisfy is refused.
# Prints one line per check group: //tools:install_<what> PASSED|FAILED.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
version="$(sed -n 's/^HURRAY_VERSION = "\(.*\)"$/\1/p' version.bzl)"
sample="${work}/sample.hrry"
status=0
report() {  # report NAME RC
  if [[ "$2" -eq 0 ]]; then
    echo "//tools:install_$1 PASSED"
  else
    echo "//tools:install_$1 FAILED"
    status=1
  fi
}

prefix="${work}/prefix"
(
  set -e
  bash tools/install.sh "${prefix}" >/dev/null
  find "${prefix}" -printf '%P %y %l\n' | sort >"${work}/tree1"
  bash tools/install.sh "${prefix}" >/dev/null
  find "${prefix}" -printf '%P %y %l\n' | sort >"${work}/tree2"
  diff -u "${work}/tree1" "${work}/tree2"
  for f in bin/hurray lib/libhurray.so lib/libhurray.so.1 \
    include/hurray/hurray.h lib/pkgconfig/hurray.pc \
    lib/cmake/hurray/hurrayConfig.cmake \
    lib/cmake/hurray/hurrayConfigVersion.cmake; do
    [[ -e "${prefix}/${f}" ]] || { echo "missing: ${f}" >&2; exit 1; }
  done
  [[ "$("${prefix}/bin/hurray" --version)" == "hurray ${version}" ]]
  readelf -d "${prefix}/lib/libhurray.so" | grep -q 'Library soname: \[libhurray.so.1\]'
  # Staged: everything under DESTDIR, nothing at the prefix itself.
  DESTDIR="${work}/stage" bash tools/install.sh /opt/hurray-test >/dev/null
  [[ -f "${work}/stage/opt/hurray-test/lib/pkgconfig/hurray.pc" ]]
  [[ ! -e /opt/hurray-test ]]
  "${prefix}/bin/hurray" pack --sample -o "${sample}" >/dev/null
) || report tree 1
[[ ${status} -eq 0 ]] && report tree 0

(
  set -e
  export PKG_CONFIG_PATH="${prefix}/lib/pkgconfig"
  [[ "$(pkg-config --modversion hurray)" == "${version}" ]]
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror -o "${work}/pc_consumer" capi/consumers/consumer.c \
    $(pkg-config --cflags --libs hurray) -Wl,-rpath,"${prefix}/lib"
  out="$("${work}/pc_consumer" "${sample}")"
  [[ "${out}" == "hurray ${version}"$'\n'"7 tensors" ]] || {
    echo "pkg-config consumer printed: ${out}" >&2
    exit 1
  }
  # capi/examples/ingest.c, the C ABI's ingest, against the install: one
  # line per tensor, the same sums whether called back or pulled.
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror -o "${work}/ingest" capi/examples/ingest.c \
    $(pkg-config --cflags --libs hurray) -Wl,-rpath,"${prefix}/lib"
  "${work}/ingest" "${sample}" >"${work}/ingest.out"
  "${work}/ingest" "${sample}" --pull >"${work}/ingest_pull.out"
  [[ $(wc -l <"${work}/ingest.out") -eq 7 ]] ||
    { echo "ingest example printed:" >&2; cat "${work}/ingest.out" >&2; exit 1; }
  grep -q $'^lm_head.weight\t2048\t' "${work}/ingest.out"
  diff -u "${work}/ingest.out" "${work}/ingest_pull.out"
  # The staged tree's .pc finds its own prefix.
  PKG_CONFIG_PATH="${work}/stage/opt/hurray-test/lib/pkgconfig" \
    pkg-config --cflags hurray | grep -q "${work}/stage/opt/hurray-test"
) 2>&1
report pkg_config $?

(
  set -e
  cmake -S capi/consumers -B "${work}/cmake" -DCMAKE_PREFIX_PATH="${prefix}" \
    -DHURRAY_WANTED="${version}" -DCMAKE_BUILD_RPATH="${prefix}/lib" >/dev/null
  cmake --build "${work}/cmake" >/dev/null
  out="$("${work}/cmake/consumer" "${sample}")"
  [[ "${out}" == "hurray ${version}"$'\n'"7 tensors" ]] || {
    echo "CMake consumer printed: ${out}" >&2
    exit 1
  }
  # A later major than the installed one is refused.
  if cmake -S capi/consumers -B "${work}/cmake_too_new" \
    -DCMAKE_PREFIX_PATH="${prefix}" -DHURRAY_WANTED=99.0 >/dev/null 2>&1; then
    echo "find_package(hurray 99.0) was satisfied by ${version}" >&2
    exit 1
  fi
) 2>&1
report cmake $?
exit "${status}"
