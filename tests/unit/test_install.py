"""What `cmake --install` put under a prefix (docs/install.md), file by file: exactly the
library (libcudarl.so.X.Y.Z with its SONAME link libcudarl.so.N and the link libcudarl.so),
libcudarl.a, include/cudarl.h as in the tree, the CLI (not in a runtime-only install), the CMake
package and cudarl.pc, and nothing else; the library's exports (test_exports.py) and a RUNPATH
that points into no build folder; pkg-config's view of cudarl.pc (the prefix wherever the
install was moved, the header's version); and that the installed CLI runs.

Usage: test_install.py PREFIX HEADER MAP BUILD [--runtime-only] [--install=CMAKE]
--install: first empty PREFIX and install BUILD there with that cmake (ctest test_install);
without it, check what is there (scripts/consumer-check.sh)."""
import filecmp
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def header_version(header):
    text = open(header).read()
    get = lambda k: re.search(r"^#define CUDARL_%s (\d+)" % k, text, flags=re.M).group(1)
    return ".".join(get("VERSION_" + k) for k in ("MAJOR", "MINOR", "PATCH")), get("ABI_VERSION")


def installed(prefix):
    out = set()
    for root, dirs, files in os.walk(prefix):
        for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            out.add(os.path.relpath(os.path.join(root, f), prefix))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runtime_only = "--runtime-only" in sys.argv
    if len(args) != 4:
        sys.exit(__doc__)
    prefix, header, map_file, build = (os.path.realpath(a) for a in args)
    version, abi = header_version(header)
    cmake = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--install=")]
    if cmake:
        shutil.rmtree(prefix, ignore_errors=True)
        subprocess.run(cmake + ["--install", build, "--prefix", prefix], check=True)
    fails = []
    libs = [d for d in ("lib", "lib64") if os.path.isdir(os.path.join(prefix, d))]
    libdir = libs[0] if libs else "lib"
    real, so, dev = ("%s/libcudarl.so.%s" % (libdir, version), "%s/libcudarl.so.%s" % (libdir, abi),
                     "%s/libcudarl.so" % libdir)
    cm = libdir + "/cmake/cudarl/"
    want = {real, so, dev, libdir + "/libcudarl.a", "include/cudarl.h",
            libdir + "/pkgconfig/cudarl.pc", cm + "cudarlConfig.cmake",
            cm + "cudarlConfigVersion.cmake", cm + "cudarlTargets.cmake",
            cm + "cudarlTargets-release.cmake", cm + "cudarlStaticTargets.cmake",
            cm + "cudarlStaticTargets-release.cmake"}
    if not runtime_only:
        want.add("bin/cudarl")
    have = installed(prefix)
    # a build of another type names its targets file after it (cudarlTargets-debug.cmake)
    have_norm = {re.sub(r"Targets-\w+\.cmake$", "Targets-release.cmake", h) for h in have}
    if want - have_norm:
        fails.append("not installed: " + ", ".join(sorted(want - have_norm)))
    if have_norm - want:
        fails.append("installed but not expected: " + ", ".join(sorted(have_norm - want)))
    p = lambda rel: os.path.join(prefix, rel)
    if os.path.exists(p(real)):
        if os.path.islink(p(real)):
            fails.append(real + " is a link; it should be the library")
        for link in (so, dev):
            if os.path.realpath(p(link)) != os.path.realpath(p(real)):
                fails.append("%s does not lead to %s" % (link, real))
        r = subprocess.run([sys.executable, os.path.join(HERE, "test_exports.py"), p(so), header,
                            map_file] + (["--runtime-only"] if runtime_only else []),
                           capture_output=True, text=True)
        print(r.stdout, end="")
        if r.returncode:
            fails.append("test_exports on the installed library:\n" + r.stdout + r.stderr)
        dyn = subprocess.run(["readelf", "-d", p(real)], capture_output=True, text=True).stdout
        for rpath in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", dyn):
            for d in rpath.split(":"):
                if d and os.path.realpath(d).startswith(build + os.sep):
                    fails.append("the installed library's RUNPATH %s points into the build %s"
                                 % (d, build))
    if os.path.exists(p("include/cudarl.h")) and not filecmp.cmp(p("include/cudarl.h"), header,
                                                                  shallow=False):
        fails.append("include/cudarl.h differs from " + header)
    env = dict(os.environ, PKG_CONFIG_PATH=p(libdir + "/pkgconfig"))
    pc = lambda *a: subprocess.run(["pkg-config"] + list(a) + ["cudarl"], capture_output=True,
                                   text=True, env=env)
    r = pc("--modversion")
    if r.returncode or r.stdout.strip() != version:
        fails.append("pkg-config --modversion cudarl: %r (%s), expected %s"
                     % (r.stdout.strip(), r.stderr.strip(), version))
    r = pc("--cflags", "--libs")
    flags = r.stdout.split()
    inc = [f[2:] for f in flags if f.startswith("-I")]
    lib = [f[2:] for f in flags if f.startswith("-L")]
    if (r.returncode or [os.path.realpath(d) for d in inc] != [p("include")] or
            [os.path.realpath(d) for d in lib] != [p(libdir)] or "-lcudarl" not in flags):
        fails.append("pkg-config --cflags --libs cudarl: %r, expected -I%s -L%s -lcudarl"
                     % (r.stdout.strip(), p("include"), p(libdir)))
    if not runtime_only and os.path.exists(p("bin/cudarl")):
        # cross-compiled: through the emulator (--emulator=SCRIPT; empty natively)
        emu = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--emulator=")]
        emu = [x for x in emu if x]
        r = subprocess.run(emu + [p("bin/cudarl"), "info"], capture_output=True, text=True)
        if r.returncode or ("cudarl " + version) not in r.stdout:
            fails.append("bin/cudarl info: exit %d, %s%s" % (r.returncode, r.stdout, r.stderr))
    for f in fails:
        print("FAIL: " + f)
    if fails:
        sys.exit(1)
    print("install at %s: %d files as expected (%s), pkg-config and the CLI work"
          % (prefix, len(have), "runtime only" if runtime_only else "full"))


if __name__ == "__main__":
    main()
