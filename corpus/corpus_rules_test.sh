#!/usr/bin/env bash
# Usage: corpus_rules_test.sh CORPUS_GEN
# Decodes every generated vector in strict and permissive mode and checks the
# outcome MANIFEST.tsv promises (corpus_gen --check).
set -euo pipefail
exec "$1" --check
