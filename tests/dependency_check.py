"""Checks the package dependency rules of docs/architecture.md.

Input: `bazel query --output=build` of every rule the shipped artifacts (the
CLI, //:stream, the C ABI, the Python module) depend on, as the genquery
//tests:shipped_deps writes it. For each rule of ours, each dependency on a
target of ours must be in a package the rule's package may use, and no
shipped rule may be testonly or depend on a testing/ or tests/ package.

Usage: dependency_check.py GRAPH      checks GRAPH, prints each violation
       dependency_check.py --self-test  checks that violations are found
"""

import re
import sys

# package prefix -> packages (prefixes) its libraries may depend on. The most
# specific prefix wins; every package of ours that is not listed may use any
# library package (but never test code).
ALLOWED = {
    "parser": ["parser", "third_party"],
    "dequant": ["dequant", "parser", "third_party"],
    "stream/container": ["stream/container", "parser", "third_party"],
    "stream/net": ["stream/net", "stream/container", "parser", "third_party"],
    "stream/http": ["stream/http", "stream/container", "third_party"],
    "stream/ingest": ["stream/ingest", "stream/resume", "stream/http",
                      "stream/net", "stream/container", "dequant", "parser",
                      "third_party"],
    # Below all of stream/ingest/: the records and the state, no sink.
    "stream/resume": ["stream/resume", "stream/container", "parser",
                      "third_party"],
    "stream/convert": ["stream/convert", "stream/container", "dequant",
                       "parser", "third_party"],
}

TEST_PACKAGE = re.compile(r"(^|/)(testing|tests)(/|$)")

RULE = re.compile(r"^# (?P<path>\S+)/BUILD(?:\.bazel)?:\d+:\d+\n"
                  r"(?P<kind>\w+)\(\n(?P<body>.*?)^\)", re.M | re.S)


def package_of(label):
    return label[2:].split(":", 1)[0]


def governing(package):
    best = None
    for prefix in ALLOWED:
        if package == prefix or package.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


def allowed(package, dep_package):
    rule = governing(package)
    if rule is None:
        return True
    return any(dep_package == p or dep_package.startswith(p + "/")
               for p in ALLOWED[rule])


def parse(text, root):
    """Yields (package, name, testonly, [dep labels of ours])."""
    for m in RULE.finditer(text):
        path = m.group("path")
        if not path.startswith(root):
            continue  # an external repository's rule
        package = path[len(root):].lstrip("/")
        body = m.group("body")
        name = re.search(r'^  name = "([^"]+)"', body, re.M).group(1)
        testonly = re.search(r"^  testonly = (True|1)", body, re.M) is not None
        deps = []
        for attr in ("deps", "implementation_deps", "data", "srcs"):
            a = re.search(r"^  %s = \[(.*?)\],?$" % attr, body, re.M | re.S)
            if a:
                deps += [d for d in re.findall(r'"(//[^"]+)"', a.group(1))
                         if package_of(d) != package]
        yield package, name, testonly, deps


def violations(text, root):
    out = []
    rules = 0
    for package, name, testonly, deps in parse(text, root):
        rules += 1
        label = "//%s:%s" % (package, name)
        if testonly or TEST_PACKAGE.search(package):
            out.append("%s is test code but a shipped artifact depends on it"
                       % label)
        for dep in deps:
            dep_package = package_of(dep)
            if TEST_PACKAGE.search(dep_package):
                out.append("%s depends on test code %s" % (label, dep))
            elif not allowed(package, dep_package):
                out.append("%s depends on %s: %s/ may use only %s" % (
                    label, dep, governing(package),
                    ", ".join(ALLOWED[governing(package)])))
    return rules, out


def self_test():
    def rule(package, name, deps, testonly=False):
        return ("# /w/%s/BUILD.bazel:1:1\ncc_library(\n  name = \"%s\",\n%s"
                "  deps = [%s],\n)\n" % (
                    package, name, "  testonly = True,\n" if testonly else "",
                    ", ".join('"%s"' % d for d in deps)))
    good = rule("stream/net", "server", ["//stream/container:walker",
                                         "//parser:parser"])
    cases = [
        (rule("parser", "decoder", ["//dequant:plan"]), "parser/ may use"),
        (rule("stream/container", "w", ["//stream/ingest:loader"]),
         "stream/container/ may use"),
        (rule("stream/net", "s", ["//stream/ingest:ingest"]),
         "stream/net/ may use"),
        (rule("stream/resume", "r", ["//stream/ingest:ingest"]),
         "stream/resume/ may use"),
        (rule("dequant", "k", ["//stream/container:x"]), "dequant/ may use"),
        (rule("tools", "cli", ["//stream/net/testing:net_test_util"]),
         "depends on test code"),
        (rule("tools", "cli", ["//tests:vectors"]), "depends on test code"),
        (rule("stream/ingest", "h", [], testonly=True), "is test code"),
    ]
    n, v = violations(good, "/w")
    assert n == 1 and not v, v
    for text, expected in cases:
        n, v = violations(good + text, "/w")
        assert n == 2 and len(v) == 1 and expected in v[0], (expected, v)
    print("self-test: %d violations found as expected" % len(cases))


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    text = open(sys.argv[1]).read()
    # The workspace root: the path before the first package of ours.
    m = re.search(r"^# (\S+)/parser/BUILD(?:\.bazel)?:", text, re.M)
    if not m:
        print("FAIL: no //parser rule in the graph")
        return 1
    rules, out = violations(text, m.group(1))
    for line in out:
        print("FAIL:", line)
    if rules < 40:
        print("FAIL: only %d rules of ours in the graph" % rules)
        return 1
    print("%d rules of ours checked, %d violations" % (rules, len(out)))
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
