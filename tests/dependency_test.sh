#!/bin/bash
# The package dependency rules (docs/architecture.md) hold for every rule the
# shipped artifacts depend on; the checker first proves it finds violations.
set -euo pipefail
/usr/bin/python3 "$1" --self-test
/usr/bin/python3 "$1" "$2"
