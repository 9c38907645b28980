"""Every Python example of the user's documents runs unchanged."""

import pytest

import seed_blocks

EXAMPLES = seed_blocks.seed_examples()


def test_the_seed_has_its_examples():
    # 002 shows each of the five schemes, the encoding round trip and the
    # placement check: seven blocks. Fewer means the cutter lost one.
    assert len(EXAMPLES) >= 7, seed_blocks.seed_dir()


@pytest.mark.parametrize("name,line,code", EXAMPLES,
                         ids=[f"{n}:{l}" for n, l, _ in EXAMPLES])
def test_seed_example_runs_verbatim(name, line, code):
    exec(compile(code, f"{name}:{line}", "exec"), {"__name__": "__seed__"})


def test_block_cutter_stops_at_prose():
    text = ("Intro\n\nimport hurray\n\nx = 1\nassert x == 1\n\n"
            "Use case: something in prose.\n\nmore prose\n")
    (line, code), = seed_blocks.python_blocks(text)
    assert line == 3
    assert "Use case" not in code and "assert x == 1" in code
