#!/usr/bin/env bash
# Installs hurray for C, C++ and any FFI, as the C and C++ ecosystems expect
# (docs/install.md):
#   PREFIX/bin/hurray                        the command-line tool
#   PREFIX/lib/libhurray.so.1.2.0            the C library (SONAME libhurray.so.1)
#   PREFIX/lib/libhurray.so.1, libhurray.so  its links
#   PREFIX/include/hurray/hurray.h           its header (#include "hurray.h")
#   PREFIX/lib/pkgconfig/hurray.pc           for pkg-config
#   PREFIX/lib/cmake/hurray/hurrayConfig.cmake, hurrayConfigVersion.cmake
#                                            find_package(hurray): hurray::hurray
# Usage: tools/install.sh PREFIX   (DESTDIR, when set, is put before PREFIX)
# Builds with -c opt first. Idempotent: a second run leaves the same tree.
# The .pc and CMake files find the prefix from where they are installed, so
# a staged (DESTDIR) or moved tree works as it is.
set -euo pipefail
if [[ $# -ne 1 || "$1" == -* ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
prefix="$1"
[[ "${prefix}" == /* ]] || prefix="$(pwd)/${prefix}"
cd "$(dirname "$0")/.."

bash tools/install_deps.sh
bazel build -c opt //tools:hurray //capi:libhurray.so.1.2.0 >/dev/null 2>&1 ||
  bazel build -c opt //tools:hurray //capi:libhurray.so.1.2.0
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
version="$(sed -n 's/^HURRAY_VERSION = "\(.*\)"$/\1/p' version.bzl)"
# The library's file name and SONAME follow the C interface (hurray.h).
api() { sed -n "s/^#define HURRAY_API_VERSION_$1 \([0-9]*\)$/\1/p" capi/hurray.h; }
so_major="$(api MAJOR)"
so_file="libhurray.so.${so_major}.$(api MINOR).$(api PATCH)"
[[ -f "${bin}/capi/${so_file}" ]] || {
  echo "install.sh: ${so_file} was not built (capi/BUILD.bazel names it)" >&2
  exit 1
}

dest="${DESTDIR:-}${prefix}"
install -d "${dest}/bin" "${dest}/lib/pkgconfig" "${dest}/lib/cmake/hurray" \
  "${dest}/include/hurray"
install -m 755 "${bin}/tools/hurray" "${dest}/bin/hurray"
install -m 755 "${bin}/capi/${so_file}" "${dest}/lib/${so_file}"
ln -sfn "${so_file}" "${dest}/lib/libhurray.so.${so_major}"
ln -sfn "libhurray.so.${so_major}" "${dest}/lib/libhurray.so"
install -m 644 capi/hurray.h "${dest}/include/hurray/hurray.h"

cat >"${dest}/lib/pkgconfig/hurray.pc" <<PC
# hurray ${version}: the C interface of hurray-cpp. Written by tools/install.sh.
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: hurray
Description: Fuzz-hardened reader of the Hurray tensor format (C interface)
Version: ${version}
Cflags: -I\${includedir}/hurray
Libs: -L\${libdir} -lhurray
PC

cat >"${dest}/lib/cmake/hurray/hurrayConfig.cmake" <<CMAKE
# hurray ${version}: find_package(hurray) gives the imported target
# hurray::hurray (libhurray.so and the folder of hurray.h). Written by
# tools/install.sh; the prefix is found from this file's place.
get_filename_component(_hurray_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET hurray::hurray)
  add_library(hurray::hurray SHARED IMPORTED)
  set_target_properties(hurray::hurray PROPERTIES
    IMPORTED_LOCATION "\${_hurray_prefix}/lib/${so_file}"
    IMPORTED_SONAME "libhurray.so.${so_major}"
    INTERFACE_INCLUDE_DIRECTORIES "\${_hurray_prefix}/include/hurray")
endif()
set(hurray_INCLUDE_DIRS "\${_hurray_prefix}/include/hurray")
set(hurray_LIBRARIES hurray::hurray)
unset(_hurray_prefix)
CMAKE

# Compatible: the same major and, below 1.0, the same minor (a 0.x minor
# release may change the C++ and Python APIs: docs/versioning.md), and not
# older than asked.
cat >"${dest}/lib/cmake/hurray/hurrayConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "${version}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION_MAJOR EQUAL "${version%%.*}" AND
       NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  if(NOT "${version%%.*}" EQUAL 0 OR
     PACKAGE_FIND_VERSION_MINOR EQUAL "$(cut -d. -f2 <<<"${version}")")
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
endif()
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE
echo "installed hurray ${version} in ${dest}"
