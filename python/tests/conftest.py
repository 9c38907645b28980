"""Shared fixtures: where the corpus and the `hurray` CLI are."""

import os
import subprocess

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
# Under `bazel test` the runfiles root; in a checkout the repository.
ROOT = os.environ.get("HURRAY_ROOT") or os.path.dirname(os.path.dirname(_HERE))


@pytest.fixture
def corpus():
    return os.path.join(ROOT, "corpus")


@pytest.fixture
def cli():
    """Runs the C++ `hurray` tool; returns (exit status, stdout, stderr)."""
    path = os.environ.get("HURRAY_CLI") or os.path.join(ROOT, "tools", "hurray")
    if not os.path.exists(path):
        pytest.fail(f"the hurray CLI is not at {path} (set HURRAY_CLI)")

    def run(*args):
        p = subprocess.run([path, *map(str, args)], capture_output=True,
                           text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    return run
