#!/bin/sh
# No-op stand-in for Bazel's coverage tools (offline build; coverage unsupported).
exit 0
