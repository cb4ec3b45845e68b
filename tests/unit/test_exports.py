"""libcudarl.so exports the public API and nothing else: every function include/cudarl.h declares
is a dynamic symbol of the library, and every defined dynamic symbol is one of them.

Usage: test_exports.py LIBRARY HEADER   (nm from binutils reads the symbols)"""
import re
import subprocess
import sys


def declared(header):
    text = open(header).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)  # macros
    names = set()
    for m in re.finditer(r"\b(cudarl_\w+)\s*\(", text):
        if re.search(r"\(\s*\*\s*$", text[max(0, m.start() - 8):m.start()]):
            continue  # a pointer to function: (*cudarl_x)(
        names.add(m.group(1))
    # names used as types in a call-like position (sizeof(cudarl_x)) are not functions
    return {n for n in names if not re.search(r"typedef[^;]*\b" + n + r"\b", text)}


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWwDdBbRr":
            syms.add(parts[2].split("@")[0])
    return syms


def main():
    lib, header = sys.argv[1], sys.argv[2]
    want, have = declared(header), exported(lib)
    extra = sorted(s for s in have - want)
    missing = sorted(want - have)
    if extra:
        print("FAIL: exported but not in %s: %s" % (header, ", ".join(extra)))
    if missing:
        print("FAIL: declared in %s but not exported: %s" % (header, ", ".join(missing)))
    if extra or missing:
        sys.exit(1)
    print("exports: %d functions, exactly the public API" % len(want))


if __name__ == "__main__":
    main()
