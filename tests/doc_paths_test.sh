#!/bin/bash
# Every path of ours that a comment or doc cites exists
# (tests/doc_paths_check.py); the checker first proves it finds stale ones.
#
# Runs outside the sandbox (tags = ["local"]) on the source tree itself: the
# runfiles link to the checker is followed back to the workspace, so every
# file of the tree is scanned without listing them all as data. Tagged
# "external" too, so that Bazel never answers from its cache (the inputs it
# sees are not the files the test reads).
set -euo pipefail
checker="$(readlink -f "$1")"
allowlist="$(readlink -f "$2")"
root="$(dirname "$(dirname "${checker}")")"
if [[ ! -f "${root}/WORKSPACE" ]]; then
  echo "cannot find the workspace from ${checker}" >&2
  exit 1
fi
/usr/bin/python3 "${checker}" --self-test
/usr/bin/python3 "${checker}" "${root}" "${allowlist}"
