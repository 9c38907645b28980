#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build this project offline with
# Bazel 4.2.3 (bazel-bootstrap). Idempotent: packages that are already
# installed are skipped, and nothing is printed when nothing is missing.
#
# Usage: tools/install_deps.sh [--with-clang-16]
#   --with-clang-16  also install clang-16 + libclang-rt-16-dev, needed only
#                    for `--config=fuzz_clang16` (see .bazelrc).
set -euo pipefail

packages=(
  bazel-bootstrap
  bazel-platforms
  libabsl-dev
  nlohmann-json3-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libboost1.81-dev
  libhwy-dev
  clang-14
  libclang-rt-14-dev
  pkg-config
  # tools/install_test.sh: a CMake project consuming the installed package.
  cmake
  # libhurray.so (capi/) links with lld: it honours the version script.
  lld
  # The Python module (python/) and its tests.
  pybind11-dev
  python3-dev
  python3-numpy
  python3-pytest
  # //python:wheel_test installs the wheel into a fresh venv (ensurepip).
  python3-venv
  # HTTPS sources (issue 15): OpenSSL for Boost.Asio's TLS; nginx and the
  # openssl tool for the loopback tests (a throw-away certificate).
  libssl-dev
  openssl
  nginx
)

for arg in "$@"; do
  case "${arg}" in
    --with-clang-16) packages+=(clang-16 libclang-rt-16-dev) ;;
    -h|--help)
      sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "install_deps.sh: unknown argument: ${arg}" >&2
      exit 2
      ;;
  esac
done

missing=()
for pkg in "${packages[@]}"; do
  # `dpkg -s` succeeds for removed-but-not-purged packages too, so check the
  # actual state.
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "${pkg}" 2>/dev/null || true)"
  if [[ "${status}" != ii* ]] || ! dpkg -s "${pkg}" >/dev/null 2>&1; then
    missing+=("${pkg}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo_cmd=()
if [[ "$(id -u)" -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install_deps.sh: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

echo "install_deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
