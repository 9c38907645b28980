#!/usr/bin/env bash
# The wheel as a user gets it: `pip install --no-index` into a fresh venv
# (Debian's python3 -m venv --system-site-packages, for numpy and pytest),
# then, from another folder, `import hurray` finds the installed package
# (not a build tree), its version and metadata agree with the file name,
# its stubs and py.typed are there, and the user's documents' examples run.
#
# Usage: wheel_test.sh WHEEL
set -euo pipefail
wheel="$(pwd)/$1"
tests="$(pwd)/python/tests"
work="${TEST_TMPDIR:-$(mktemp -d)}/wheel"
rm -rf "${work}" && mkdir -p "${work}/elsewhere"
name="$(basename "${wheel}")"
[[ "${name}" =~ ^hurray-([0-9]+\.[0-9]+\.[0-9]+)-cp311-cp311-linux_x86_64\.whl$ ]] ||
  { echo "FAIL: wheel name ${name}" >&2; exit 1; }
version="${BASH_REMATCH[1]}"

/usr/bin/python3 -m venv --system-site-packages "${work}/venv"
py="${work}/venv/bin/python"
"${py}" -m pip install --no-index --no-cache-dir --disable-pip-version-check \
  -q "${wheel}"
cd "${work}/elsewhere"
unset PYTHONPATH
"${py}" - "${work}/venv" "${version}" <<'PY'
import importlib.metadata, os, sys
venv, version = sys.argv[1], sys.argv[2]
import hurray
where = os.path.realpath(hurray.__file__)
assert where.startswith(os.path.realpath(venv)), f"hurray came from {where}"
assert hurray.__version__ == version, (hurray.__version__, version)
meta = importlib.metadata.metadata("hurray")
assert meta["Version"] == version and meta["Name"] == "hurray", dict(meta)
assert any(r.startswith("numpy") for r in importlib.metadata.requires("hurray"))
pkg = os.path.dirname(where)
for f in ("py.typed", "__init__.pyi", "_hurray.so"):
    assert os.path.exists(os.path.join(pkg, f)), f
files = {str(p) for p in importlib.metadata.files("hurray")}
assert "hurray/_hurray.so" in files, sorted(files)
print(f"installed hurray {version} at {pkg}")
PY
# The documents' examples against the installed package (the tests folder
# is on the path for its helpers only: it holds no `hurray`).
"${py}" -m pytest -q -p no:cacheprovider "${tests}/test_seed_examples.py"
"${py}" -m pip uninstall -q -y hurray
if "${py}" -c 'import hurray' 2>/dev/null; then
  echo "FAIL: hurray still imports after pip uninstall" >&2
  exit 1
fi
echo "PASS: the wheel installs, imports and runs the documents' examples"
