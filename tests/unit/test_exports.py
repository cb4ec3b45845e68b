"""libcudarl.so exports the public API and nothing else:

- every defined dynamic symbol is a function named cudarl_* (no data, no other name), plus the
  version nodes of cmake/cudarl.map (CUDARL_<abi>, CUDARL_<abi>_TRAIN);
- a full build exports every function include/cudarl.h declares (its static inline wrappers
  aside), the runtime ones (the first node of cmake/cudarl.map) at CUDARL_<abi> and the rest at
  CUDARL_<abi>_TRAIN; a runtime-only build (--runtime-only) exports exactly the runtime ones, at
  CUDARL_<abi>, and their list in cmake/cudarl.map is what that build has;
- its SONAME is libcudarl.so.<CUDARL_ABI_VERSION>, and a versioned file name
  (libcudarl.so.X.Y.Z) carries the header's version.

Usage: test_exports.py LIBRARY HEADER MAP [--runtime-only]
Run on the build's library (ctest test_exports) and on an installed one (test_install.py,
scripts/consumer-check.sh). nm and readelf (binutils) read the library."""
import os
import re
import subprocess
import sys


def header_facts(header):
    """The functions the header declares (not its static inline wrappers) and its version."""
    raw = open(header).read()
    macros = dict(re.findall(r"^#define (CUDARL_(?:VERSION_\w+|ABI_VERSION)) (\d+)\s*$", raw,
                             flags=re.M))
    text = re.sub(r"/\*.*?\*/", " ", raw, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)  # macros
    inline = set(re.findall(r"static\s+inline\b[^;{(]*?\b(cudarl_\w+)\s*\(", text))
    names = set()
    for m in re.finditer(r"\b(cudarl_\w+)\s*\(", text):
        if re.search(r"\(\s*\*\s*$", text[max(0, m.start() - 8):m.start()]):
            continue  # a pointer to function: (*cudarl_x)(
        names.add(m.group(1))
    # names used as types in a call-like position (sizeof(cudarl_x)) are not functions
    names = {n for n in names if not re.search(r"typedef[^;]*\b" + n + r"\b", text)}
    return names - inline, inline, macros


def runtime_list(map_file):
    """The names of the first version node of cmake/cudarl.map (the runtime's functions)."""
    text = re.sub(r"/\*.*?\*/", " ", open(map_file).read(), flags=re.S)
    m = re.search(r"(\w+)\s*\{\s*global:(.*?)local:", text, flags=re.S)
    if not m:
        sys.exit("FAIL: %s has no first version node with global: and local:" % map_file)
    return m.group(1), {n.strip() for n in m.group(2).split(";") if n.strip()}


def exported(lib):
    """{name: version} of the defined dynamic symbols, and what is wrong with any of them."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    funcs, nodes, bad = {}, set(), []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        kind, sym = parts[1], parts[2]
        name, _, version = sym.partition("@")
        version = version.lstrip("@")
        if kind == "A":  # a version node's own symbol
            nodes.add(name)
        elif kind in "Tt" and name.startswith("cudarl_"):
            funcs[name] = version
        else:
            bad.append("%s (nm type %s)" % (sym, kind))
    return funcs, nodes, bad


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return m.group(1) if m else None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runtime_only = "--runtime-only" in sys.argv
    if len(args) != 3:
        sys.exit(__doc__)
    lib, header, map_file = args
    declared, inline, macros = header_facts(header)
    abi = macros.get("CUDARL_ABI_VERSION")
    node, runtime = runtime_list(map_file)
    funcs, nodes, bad = exported(lib)
    fails = []
    if bad:
        fails.append("exported but not a cudarl_* function: " + ", ".join(sorted(bad)))
    if node != "CUDARL_%s" % abi:
        fails.append("%s's first node is %s; CUDARL_ABI_VERSION is %s, so it should be CUDARL_%s"
                     % (map_file, node, abi, abi))
    if runtime - declared:
        fails.append("%s lists functions the header does not declare: %s"
                     % (map_file, ", ".join(sorted(runtime - declared))))
    want = runtime if runtime_only else declared
    have = set(funcs)
    if have - want:
        fails.append("exported but not %s: %s" % (
            "in the runtime list of " + map_file if runtime_only else "declared in " + header,
            ", ".join(sorted(have - want))))
    if want - have:
        fails.append("%s but not exported: %s" % (
            "in the runtime list of " + map_file if runtime_only else "declared in " + header,
            ", ".join(sorted(want - have))))
    for name, version in sorted(funcs.items()):
        expect = node if name in runtime else node + "_TRAIN"
        if version != expect:
            fails.append("%s has version %r, expected %s" % (name, version, expect))
    expect_nodes = {node} if runtime_only else {node, node + "_TRAIN"}
    if nodes != expect_nodes:
        fails.append("version nodes %s, expected %s" % (sorted(nodes), sorted(expect_nodes)))
    so = soname(lib)
    if so != "libcudarl.so.%s" % abi:
        fails.append("SONAME %s, expected libcudarl.so.%s (CUDARL_ABI_VERSION)" % (so, abi))
    m = re.match(r"libcudarl\.so\.(\d+)\.(\d+)\.(\d+)$", os.path.basename(os.path.realpath(lib)))
    version = tuple(macros.get("CUDARL_VERSION_" + k) for k in ("MAJOR", "MINOR", "PATCH"))
    if m and m.groups() != version:
        fails.append("the file is %s, the header's version %s" % (
            os.path.basename(os.path.realpath(lib)), ".".join(version)))
    for f in fails:
        print("FAIL: " + f)
    if fails:
        sys.exit(1)
    print("exports of %s: %d functions (%d of the runtime at %s%s), exactly the %s; SONAME %s"
          % (lib, len(funcs), len(runtime & have), node,
             "" if runtime_only else ", %d at %s_TRAIN" % (len(have - runtime), node),
             "runtime-only API" if runtime_only else "public API", so))


if __name__ == "__main__":
    main()
