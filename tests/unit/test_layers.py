#!/usr/bin/env python3
"""Every #include under src/ and tools/ against the layer table of docs/DESIGN.md.

    python3 tests/unit/test_layers.py [--root REPO] [--known FILE]
    python3 tests/unit/test_layers.py --self-test

The table is the markdown table under the heading `## Layers` (columns: layer, folder, may
include). A file's layer is the row whose folder holds it (src/env/cartpole/x.c: the row of
src/env); a file under src/ in no row's folder is an error. A header named in a line of the form
"`include/cudarl.h` may be included by every layer" may be included from anywhere.

An include "x" resolves as the compiler resolves it here: against the including file's folder,
then src/, then include/. One that resolves to no file (generated headers such as onnx.pb-c.h)
or to a file under third_party/ is not checked. Angle-bracket includes are system headers.

Exits 1 on any forbidden edge, printing file:line, the edge and the rule for each.
Edges known to be forbidden but not yet fixed are listed, one `file -> included` per line (paths
from the repository root, the included file as resolved), in layers_known.txt beside this
script; a listed edge that is no longer forbidden is an error too, so the list only shrinks.

--self-test copies the sources to a temporary folder, injects forbidden and harmless includes
and checks that the test fails, or passes, naming what it should.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
SCANNED = ("src", "tools")           # the folders whose includes are checked
SEARCH = ("src", "include")          # searched after the including file's folder
IGNORED = ("third_party",)           # includes resolving here are not checked
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))
KNOWN_NAME = "layers_known.txt"

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
ROW_RE = re.compile(r"^\|(.*)\|\s*$")
EVERYWHERE_RE = re.compile(r"`([^`]+)` may be included by every layer")


class Table:
    """The layer table: layer -> folder, layer -> the layers it may include."""

    def __init__(self, folders, allowed, everywhere):
        self.folders = folders        # {layer: folder}, folder relative to the root
        self.allowed = allowed        # {layer: [layer, ...]} in the table's order
        self.everywhere = everywhere  # {path}: headers any layer may include

    def layer_of(self, path):
        """The layer whose folder holds path (the deepest folder), or None."""
        best = None
        for layer, folder in self.folders.items():
            if path.startswith(folder + "/") and (best is None or
                                                  len(folder) > len(self.folders[best])):
                best = layer
        return best


def parse_table(design_path):
    """Reads the `## Layers` section of docs/DESIGN.md; raises ValueError naming what is wrong."""
    with open(design_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "## Layers")
    except StopIteration:
        raise ValueError(f"{design_path}: no '## Layers' heading") from None
    section = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        section.append(line)
    rows = [[c.strip() for c in m.group(1).split("|")]
            for m in map(ROW_RE.match, section) if m]
    if len(rows) < 3 or [c.lower() for c in rows[0]] != ["layer", "folder", "may include"]:
        raise ValueError(f"{design_path}: the Layers section needs a table with the columns "
                         "| layer | folder | may include |")
    folders, allowed = {}, {}
    for row in rows[2:]:  # rows[1] is the |---| separator
        if len(row) != 3:
            raise ValueError(f"{design_path}: layer table row {row} has not 3 columns")
        layer, folder, may = row
        folders[layer] = folder.strip("`").rstrip("/")
        allowed[layer] = [m.strip() for m in may.split(",") if m.strip()]
    for layer, may in allowed.items():
        for m in may:
            if m not in folders:
                raise ValueError(f"{design_path}: layer {layer} may include '{m}', which is not "
                                 "a layer of the table")
    everywhere = set(EVERYWHERE_RE.findall("\n".join(section)))
    return Table(folders, allowed, everywhere)


def strip_comments(text):
    """text with every comment blanked out (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def source_files(root):
    """Every source file under the scanned folders, as sorted paths relative to root."""
    found = []
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in filenames:
                if name.endswith(SOURCE_EXT):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(p.replace(os.sep, "/") for p in found)


def resolve(root, including, name):
    """The path (relative to root) that `#include "name"` in `including` opens, or None."""
    bases = [os.path.dirname(including)] + list(SEARCH)
    for base in bases:
        path = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
        if not path.startswith("../") and os.path.isfile(os.path.join(root, path)):
            return path
    return None


def includes(root, path):
    """(line, include text, resolved path) for each quoted include of path that resolves."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        text = strip_comments(f.read())
    for m in INCLUDE_RE.finditer(text):
        target = resolve(root, path, m.group(1))
        if target is None or target.split("/")[0] in IGNORED:
            continue
        yield text.count("\n", 0, m.start()) + 1, m.group(1), target


def outside(path):
    """How a file in no layer is named in an edge: its top folder (src/: its first two)."""
    parts = path.split("/")
    return "/".join(parts[:2] if parts[0] == "src" and len(parts) > 2 else parts[:1])


def read_known(known_path):
    """{(file, included): line number} from the allow-list; [] of errors for bad lines."""
    known, errors = {}, []
    if not os.path.isfile(known_path):
        return known, errors
    with open(known_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split("->")]
            if len(parts) != 2 or not all(parts):
                errors.append(f"{known_path}:{n}: expected 'file -> included', got '{line}'")
                continue
            known[tuple(parts)] = n
    return known, errors


def check(root, design_path, known_path):
    """Runs the test on the tree at root. Returns (errors, summary line)."""
    try:
        table = parse_table(design_path)
    except (OSError, ValueError) as e:
        return [str(e)], ""
    known, errors = read_known(known_path)
    seen_known = set()
    n_files = n_includes = 0
    for path in source_files(root):
        n_files += 1
        layer = table.layer_of(path)
        if layer is None:
            folder = os.path.dirname(path) or path
            errors.append(f"{path}: lives in {folder}/, which is in no layer's folder of the "
                          f"table in {os.path.relpath(design_path, root)}")
            continue
        for line, name, target in includes(root, path):
            n_includes += 1
            if target in table.everywhere:
                continue
            to = table.layer_of(target) or outside(target)
            if to in table.allowed[layer]:
                continue
            if (path, target) in known:
                seen_known.add((path, target))
                continue
            rule = ", ".join(table.allowed[layer])
            errors.append(f'{path}:{line}: {layer} -> {to}: #include "{name}" ({target}); '
                          f"rule: {layer} may include {rule}")
    for edge, n in sorted(known.items(), key=lambda kv: kv[1]):
        if edge not in seen_known:
            errors.append(f"{known_path}:{n}: stale: {edge[0]} -> {edge[1]} is not a "
                          "forbidden include of the tree (fixed, moved or allowed now); "
                          "delete the line")
    summary = (f"layers: {n_files} files, {n_includes} includes checked against "
               f"{len(table.folders)} layers; {len(seen_known)} known violations allowed by "
               f"{os.path.relpath(known_path, root)}")
    return errors, summary


def self_test(root, real_known):
    """Injects includes into a copy of the tree and checks what the test says about each."""
    failures = []

    def expect(what, ok):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="cudarl-layers-") as tmp:
        for top in dict.fromkeys(SCANNED + SEARCH + IGNORED):
            if os.path.isdir(os.path.join(root, top)):
                shutil.copytree(os.path.join(root, top), os.path.join(tmp, top))
        os.makedirs(os.path.join(tmp, "docs"))
        design = os.path.join(tmp, "docs", "DESIGN.md")
        shutil.copy(os.path.join(root, "docs", "DESIGN.md"), design)
        known = os.path.join(tmp, "known.txt")
        if os.path.isfile(real_known):
            shutil.copy(real_known, known)
        else:
            open(known, "w").close()

        base, _ = check(tmp, design, known)
        print(f"the copy of the tree gives {len(base)} errors before any injection")

        def append(path, text):
            with open(os.path.join(tmp, path), "a", encoding="utf-8") as f:
                f.write(text)

        def lines_of(path):
            with open(os.path.join(tmp, path), encoding="utf-8") as f:
                return f.read().count("\n")

        core = next(p for p in source_files(tmp) if p.startswith("src/core/") and
                    p.endswith(".c"))
        algo_h = next(p for p in source_files(tmp) if p.startswith("src/algo/") and
                      p.endswith(".h"))
        inc = algo_h[len("src/"):]
        # harmless: a core header, a header that exists nowhere, a comment, a string
        append(core, '#include "core/core.h"\n#include "no_such_header_anywhere.h"\n'
                     f'/* #include "{inc}" */\n// #include "{inc}"\n'
                     f'static const char *layers_self_test = "#include \\"{inc}\\"";\n')
        errs, _ = check(tmp, design, known)
        expect("allowed, unresolved, commented and quoted includes add no error",
               errs == base)

        append(core, f'#include "{inc}"\n')
        line = lines_of(core)
        errs, _ = check(tmp, design, known)
        want = f"{core}:{line}: core -> algo"
        new = [e for e in errs if e not in base]
        expect(f"#include \"{inc}\" in {core} fails naming '{want}'",
               len(new) == 1 and new[0].startswith(want) and "rule: core may include core"
               in new[0])
        for e in new:
            print("     " + e)

        append("known.txt", f"{core} -> {algo_h}\n")
        errs, _ = check(tmp, design, known)
        expect("the same edge listed in the allow-list passes", errs == base)

        append("known.txt", "src/core/gone.c -> src/algo/gone.h\n")
        errs, _ = check(tmp, design, known)
        new = [e for e in errs if e not in base]
        expect("a stale allow-list line fails naming it",
               len(new) == 1 and "stale: src/core/gone.c -> src/algo/gone.h" in new[0])

        os.makedirs(os.path.join(tmp, "src", "zzz"))
        append("src/zzz/x.c", '#include "core/core.h"\n')
        errs, _ = check(tmp, design, known)
        new = [e for e in errs if e not in base]
        expect("a file in src/zzz/ (no layer) fails naming the folder",
               any(e.startswith("src/zzz/x.c: lives in src/zzz/") for e in new))

        append(core, '#include "cudarl.h"\n')
        errs2, _ = check(tmp, design, known)
        expect("include/cudarl.h may be included by every layer", errs2 == errs)

    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=DEFAULT_ROOT, help="repository root (default: %(default)s)")
    ap.add_argument("--known", default=os.path.join(HERE, KNOWN_NAME),
                    help="allow-list of known violations (default: %(default)s)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the test itself on a copy of the tree")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(root, os.path.abspath(args.known))
    errors, summary = check(root, os.path.join(root, "docs", "DESIGN.md"),
                            os.path.abspath(args.known))
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layer errors: fix the include, or the table in docs/DESIGN.md if "
              "the rule itself changes")
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
