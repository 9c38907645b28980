"""The Python examples of the user's documents, cut out of the text.

A block starts at a line ``import hurray`` and takes each following
paragraph (lines up to a blank line) while the block still compiles as
Python: prose after an example ("Use case: ...") does not.
"""

import glob
import os

_HERE = os.path.dirname(os.path.realpath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def _origin_checkout():
    """The local checkout this one was cloned from, if any (read from
    .git/config, without git)."""
    try:
        lines = open(os.path.join(_REPO, ".git", "config")).read().splitlines()
    except OSError:
        return None
    in_origin = False
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            in_origin = line == '[remote "origin"]'
        elif in_origin and line.startswith("url"):
            url = line.split("=", 1)[1].strip()
            return url if os.path.isdir(url) else None
    return None


def seed_dir():
    """../shared/seeds beside the checkout, else beside the local checkout
    it was cloned from (a throw-away clone in /tmp); HURRAY_SEEDS
    overrides."""
    if os.environ.get("HURRAY_SEEDS"):
        return os.environ["HURRAY_SEEDS"]
    beside = os.path.join(os.path.dirname(_REPO), "shared", "seeds")
    origin = _origin_checkout()
    if not os.path.isdir(beside) and origin:
        from_origin = os.path.join(
            os.path.dirname(os.path.realpath(origin)), "shared", "seeds")
        if os.path.isdir(from_origin):
            return from_origin
    return beside


def _paragraphs(lines):
    para = []
    for line in lines:
        para.append(line)
        if not line.strip():
            yield para
            para = []
    if para:
        yield para


def _compiles(text):
    try:
        compile(text, "<seed>", "exec")
        return True
    except SyntaxError:
        return False


def python_blocks(text):
    lines = text.splitlines(keepends=True)
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "import hurray":
            i += 1
            continue
        rest = list(_paragraphs(lines[i:]))
        block = ""
        used = 0
        for para in rest:
            candidate = block + "".join(para)
            if not _compiles(candidate):
                break
            block, used = candidate, used + len(para)
        blocks.append((i + 1, block))
        i += max(used, 1)
    return blocks


def seed_examples():
    """(seed file name, first line, code) of every Python block."""
    out = []
    for path in sorted(glob.glob(os.path.join(seed_dir(), "*.txt"))):
        with open(path, encoding="utf-8") as f:
            for line, code in python_blocks(f.read()):
                out.append((os.path.basename(path), line, code))
    return out
