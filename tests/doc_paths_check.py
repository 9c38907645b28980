"""Checks that every path of ours a comment or doc cites exists.

Scans source files (.h .cc .c .py .pyi .sh .bzl BUILD.bazel) and docs (.md)
under the workspace root for tokens that start with one of our top folders
(parser/ dequant/ stream/ ...) and accepts a token when it names
 - an existing file or folder, from the root or from the citing file's
   package (folder of its nearest BUILD.bazel) or folder;
 - a Bazel target or its output: `pkg/name` where pkg/BUILD.bazel declares
   name = "name" (also `pkg/name.so`, `pkg:name`);
 - a glob or placeholder (`corpus/TARGET`, `fuzz/findings/<target>`,
   `stream/net/*.h`) whose fixed part up to the placeholder exists;
 - a generated path (fuzz/findings/) or a path of another project listed in
   doc_paths_allowlist.txt.
History logs (bench/RESULTS.md, fuzz/CAMPAIGNS.md, fuzz/known_bugs/) are
exempt: they record what was true when they were written.

Usage: doc_paths_check.py ROOT ALLOWLIST   prints each stale citation
       doc_paths_check.py --self-test      checks that stale ones are found
"""

import os
import re
import sys
import tempfile

TOP = ("parser", "dequant", "stream", "python", "capi", "tools", "fuzz",
       "corpus", "bench", "tests", "docs", "third_party")
EXTS = (".h", ".cc", ".c", ".py", ".pyi", ".sh", ".bzl", ".md")
EXEMPT = ("bench/RESULTS.md", "fuzz/CAMPAIGNS.md", "fuzz/known_bugs/")
GENERATED = ("fuzz/findings",)
SKIP_DIRS = (".git", "__pycache__")

TOKEN = re.compile(
    r"(?<![\w./$@:-])((?:%s)/[\w.*<>{}\[\]/:,+-]*)" % "|".join(TOP))
PLACEHOLDER = re.compile(r"[*<>{}\[\]]|^[A-Z][A-Z_0-9]*$")
LABEL = re.compile(
    r"(?<![\w/])//((?:%s)(?:/[\w.-]+)*)(?::([\w./+-]*))?" % "|".join(TOP))
SPECIAL_TARGETS = ("all", "__pkg__", "__subpackages__", "*")
SELF = "tests/doc_paths_check.py"


def source_files(root):
  """Yields workspace-relative paths of the files to scan."""
  for top in [""] + list(TOP):
    start = os.path.join(root, top)
    if not os.path.isdir(start):
      continue
    for folder, dirs, files in os.walk(start):
      rel = os.path.relpath(folder, root)
      if top == "":
        dirs[:] = []
      dirs[:] = sorted(d for d in dirs
                       if d not in SKIP_DIRS and not d.startswith("bazel-"))
      if rel.replace(os.sep, "/").startswith(GENERATED):
        dirs[:] = []
        continue
      for name in sorted(files):
        if name == "BUILD.bazel" or name.endswith(EXTS):
          path = os.path.normpath(os.path.join(rel, name)).replace(os.sep, "/")
          if not path.startswith(EXEMPT) and path != SELF:
            yield path


class Tree:
  """Answers whether a workspace-relative name exists in some form."""

  def __init__(self, root, allowlist):
    self.root = root
    self.allow = allowlist
    self.targets = {}

  def package_of(self, path):
    folder = os.path.dirname(path)
    while folder:
      if os.path.isfile(os.path.join(self.root, folder, "BUILD.bazel")):
        return folder
      folder = os.path.dirname(folder)
    return ""

  def declared(self, pkg):
    if pkg not in self.targets:
      names = set()
      build = os.path.join(self.root, pkg, "BUILD.bazel")
      if os.path.isfile(build):
        with open(build, encoding="utf-8", errors="replace") as f:
          names = set(re.findall(r'\bname\s*=\s*"([^"]+)"', f.read()))
      self.targets[pkg] = names
    return self.targets[pkg]

  def is_target(self, path):
    """pkg/name, pkg/name.so, pkg/sub/name of a target of package pkg."""
    if ":" in path:
      pkg, name = path.split(":", 1)
      return (os.path.isfile(os.path.join(self.root, pkg, "BUILD.bazel")) and
              (name in self.declared(pkg) or self.exists(pkg + "/" + name)))
    parts = path.split("/")
    for i in range(len(parts) - 1, 0, -1):
      pkg = "/".join(parts[:i])
      if os.path.isfile(os.path.join(self.root, pkg, "BUILD.bazel")):
        name = "/".join(parts[i:])
        names = self.declared(pkg)
        stem = re.sub(r"\.(so|a|py|zip|whl|tar\.gz)$", "", name)
        stem = re.sub(r"^lib", "", stem) if stem not in names else stem
        return name in names or stem in names
    return False

  def exists(self, path):
    return os.path.exists(os.path.join(self.root, path))

  def ok(self, token, citing):
    token = token.rstrip("/")
    if any(token == a.rstrip("/") or token.startswith(a.rstrip("/") + "/")
           for a in self.allow):
      return True
    if token.startswith(GENERATED):
      return True
    # A placeholder: its fixed part must exist.
    parts = token.split("/")
    for i, part in enumerate(parts):
      if PLACEHOLDER.search(part):
        fixed = "/".join(parts[:i])
        prefix = re.split(r"[*<{\[]", part)[0]
        if re.match(r"^[A-Z][A-Z_0-9]*$", part):
          prefix = ""
        if not self.ok(fixed, citing):
          return False
        if not prefix:
          return True
        if "/" in prefix or ":" in prefix:
          return self.ok(fixed + "/" + prefix, citing)
        folder = os.path.join(self.root, fixed)
        return any(n.startswith(prefix) for n in os.listdir(folder)) \
            if os.path.isdir(folder) else True
    # file.cc:123 or file.h:Name cites a place in a file.
    if ":" in token:
      left, right = token.split(":", 1)
      if self.exists(left) and os.path.isfile(os.path.join(self.root, left)):
        return True
    bases = ["", self.package_of(citing), os.path.dirname(citing)]
    for base in bases:
      path = os.path.normpath(os.path.join(base, token)).replace(os.sep, "/")
      if self.exists(path) or self.is_target(path):
        return True
    return False

  def label_ok(self, pkg, name):
    """//pkg or //pkg:name names a package of ours and a target in it."""
    if any(a.startswith("//") and ("//" + pkg + (":" + name if name else ""))
           .startswith(a) for a in self.allow):
      return True
    if pkg.endswith("/..."):
      return os.path.isdir(os.path.join(self.root, pkg[:-4]))
    if not os.path.isfile(os.path.join(self.root, pkg, "BUILD.bazel")):
      return False
    name = (name or "").rstrip(".,;")
    if (not name or name in SPECIAL_TARGETS or name.endswith("_") or
        PLACEHOLDER.search(name)):
      return True
    return name in self.declared(pkg) or self.exists(pkg + "/" + name)


def clean(token):
  token = token.rstrip(".,:;")
  # A prefix a shell variable completes (gen_${f}) is a placeholder.
  if token.endswith(("_", "-")):
    token += "*"
  # Drop an unbalanced closing bracket of the prose around the token.
  for open_, close in (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">")):
    while token.endswith(close) and token.count(close) > token.count(open_):
      token = token[:-1].rstrip(".,:;")
  return token


def stale_citations(root, allowlist):
  tree = Tree(root, allowlist)
  found = []
  for path in source_files(root):
    with open(os.path.join(root, path), encoding="utf-8",
              errors="replace") as f:
      for lineno, line in enumerate(f, 1):
        for match in TOKEN.finditer(line):
          token = clean(match.group(1))
          if token.count("/") == 0 or token.endswith("/") and False:
            continue
          if not tree.ok(token, path):
            found.append("%s:%d: %s" % (path, lineno, token))
        for match in LABEL.finditer(line):
          pkg = match.group(1)
          if not pkg.endswith("/..."):
            pkg = pkg.rstrip(".")
          if not tree.label_ok(pkg, match.group(2)):
            found.append("%s:%d: %s" % (path, lineno, match.group(0)))
  return found


def read_allowlist(path):
  with open(path, encoding="utf-8") as f:
    return [l.split("#")[0].strip() for l in f
            if l.split("#")[0].strip()]


def self_test():
  with tempfile.TemporaryDirectory() as root:
    def write(path, text):
      os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
      with open(os.path.join(root, path), "w") as f:
        f.write(text)
    write("stream/ingest/BUILD.bazel", 'cc_library(name = "loader")\n')
    write("stream/ingest/loader.h", "// See stream/ingest/loader.cc.\n")
    write("bench/BUILD.bazel", 'cc_binary(name = "decode_bench")\n')
    write("python/BUILD.bazel", "# runs tests/x.py\n")
    write("python/tests/x.py", "")
    write("docs/a.md",
          "Run bench/decode_bench (stream/ingest/loader.h, see\n"
          "`stream/ingest:loader`), corpus/TARGET, fuzz/findings/<t>,\n"
          "stream/ingest/*.h and docs/spec/x.md; stream/ingest/ holds it.\n"
          "bazel build //stream/ingest:loader //bench:all //stream/...\n")
    write("bench/RESULTS.md", "old: stream/loader.h\n")
    write("corpus/x", "")
    allow = ["docs/spec/"]
    if stale_citations(root, allow) != ["stream/ingest/loader.h:1: "
                                        "stream/ingest/loader.cc"]:
      print("self-test: the missing loader.cc was not the only finding:",
            stale_citations(root, allow))
      return 1
    write("stream/ingest/loader.cc", "")
    write("docs/b.md", "stream/loader.h, stream/net_*, bench/nope_bench,\n"
          "stream/ingest:nope, docs/spec/x.md //stream:loader\n")
    want = ["docs/a.md:3: docs/spec/x.md",
            "docs/b.md:1: stream/loader.h", "docs/b.md:1: stream/net_*",
            "docs/b.md:1: bench/nope_bench", "docs/b.md:2: stream/ingest:nope",
            "docs/b.md:2: docs/spec/x.md", "docs/b.md:2: //stream:loader"]
    got = stale_citations(root, [])
    if got != want:
      print("self-test: want", want, "got", got)
      return 1
  return 0


def main(argv):
  if argv[1:] == ["--self-test"]:
    return self_test()
  root, allow = argv[1], argv[2]
  found = stale_citations(root, read_allowlist(allow))
  for line in found:
    print(line)
  if found:
    print("%d citations of paths of ours that do not exist (fix the text, or "
          "list a path of another project in %s)" % (len(found), allow))
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
