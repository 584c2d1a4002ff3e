"""Build script for the axle Python package (the C extension axle._axle).

The extension links against libaxle. Where that comes from, in this order:

  AXLE_BUILD_DIR   an Axle CMake build tree: <dir>/lib/libaxle.so; headers from the
                   source tree its CMakeCache.txt names (<src>/core/include)
  AXLE_PREFIX      an Axle install prefix: <prefix>/include/axle/axle.h and
                   <prefix>/lib*/libaxle.so
  (default)        the repository's ./build, i.e. ../../build next to this file
  pkg-config axle  when none of the above has a libaxle

The library directory is written into the extension as its rpath, so nothing needs
LD_LIBRARY_PATH at run time, and libaxle finds its plugins next to itself
(<libdir>/axle/plugins). AXLE_PY_BUILD_BASE redirects setuptools' build directory
and where egg-info metadata goes (the tests use it so that two build trees never share
object files and the source tree stays clean).
"""
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.command.egg_info import egg_info as _egg_info

try:
    from setuptools.command.build import build as _build
except ImportError:  # setuptools < 62.4
    from distutils.command.build import build as _build

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
LIB_NAMES = ("libaxle.so", "libaxle.dylib")


def _has_lib(d):
    return any(os.path.exists(os.path.join(d, n)) for n in LIB_NAMES)


def _cmake_source_dir(build_dir):
    cache = os.path.join(build_dir, "CMakeCache.txt")
    try:
        with open(cache, encoding="utf-8", errors="replace") as f:
            for line in f:
                for key in ("Axle_SOURCE_DIR:", "CMAKE_HOME_DIRECTORY:"):
                    if line.startswith(key):
                        return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def _from_build_dir(build_dir):
    build_dir = os.path.abspath(build_dir)
    lib = os.path.join(build_dir, "lib")
    candidates = [_cmake_source_dir(build_dir), os.path.dirname(build_dir), REPO]
    for src in candidates:
        if src and os.path.exists(os.path.join(src, "core", "include", "axle", "axle.h")):
            return os.path.join(src, "core", "include"), lib
    return None, lib


def _from_prefix(prefix):
    prefix = os.path.abspath(prefix)
    inc = os.path.join(prefix, "include")
    for sub in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
        lib = os.path.join(prefix, sub)
        if _has_lib(lib):
            return inc, lib
    return inc, os.path.join(prefix, "lib")


def _from_pkg_config():
    try:
        cflags = subprocess.run(["pkg-config", "--cflags-only-I", "axle"], check=True,
                                capture_output=True, text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs-only-L", "axle"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, None
    incs = [a[2:] for a in shlex.split(cflags) if a.startswith("-I")]
    libdirs = [a[2:] for a in shlex.split(libs) if a.startswith("-L")]
    return (incs[0] if incs else "/usr/include"), (libdirs[0] if libdirs else "/usr/lib")


def locate_axle():
    """Returns (include_dir, lib_dir, how) or exits with an explanation."""
    tried = []
    if os.environ.get("AXLE_BUILD_DIR"):
        inc, lib = _from_build_dir(os.environ["AXLE_BUILD_DIR"])
        tried.append("AXLE_BUILD_DIR=%s" % os.environ["AXLE_BUILD_DIR"])
        how = "AXLE_BUILD_DIR"
    elif os.environ.get("AXLE_PREFIX"):
        inc, lib = _from_prefix(os.environ["AXLE_PREFIX"])
        tried.append("AXLE_PREFIX=%s" % os.environ["AXLE_PREFIX"])
        how = "AXLE_PREFIX"
    else:
        inc, lib = _from_build_dir(os.path.join(REPO, "build"))
        tried.append("default build tree %s" % os.path.join(REPO, "build"))
        how = "default build tree"
        if not (inc and _has_lib(lib)):
            inc, lib = _from_pkg_config()
            tried.append("pkg-config axle")
            how = "pkg-config"
    if inc and lib and _has_lib(lib) and os.path.exists(os.path.join(inc, "axle", "axle.h")):
        return inc, lib, how
    sys.exit(
        "axle: cannot find an Axle build (tried: %s).\n"
        "Build Axle first (cmake -S . -B build && cmake --build build) or set\n"
        "AXLE_BUILD_DIR to a build tree or AXLE_PREFIX to an install prefix." % "; ".join(tried))


class build(_build):
    """`build` whose build_base defaults to $AXLE_PY_BUILD_BASE when set."""

    def initialize_options(self):
        super().initialize_options()
        if os.environ.get("AXLE_PY_BUILD_BASE"):
            self.build_base = os.environ["AXLE_PY_BUILD_BASE"]


class build_ext(_build_ext):
    """`build_ext` that always relinks: the extension's rpath names the libaxle it was
    built against, so an object left in build/ from another Axle build must not be reused."""

    def finalize_options(self):
        self.force = True   # (Command.__init__ resets it after initialize_options)
        super().finalize_options()


class egg_info(_egg_info):
    """`egg_info` that writes under $AXLE_PY_BUILD_BASE when set (keeps the source tree clean)."""

    def initialize_options(self):
        super().initialize_options()
        base = os.environ.get("AXLE_PY_BUILD_BASE")
        if base:
            os.makedirs(base, exist_ok=True)
            self.egg_base = base


def _extension():
    inc, lib, how = locate_axle()
    print("axle: building against libaxle in %s (%s), headers in %s" % (lib, how, inc))
    return Extension(
        "axle._axle",
        sources=["src/_axle.c"],
        include_dirs=[inc],
        library_dirs=[lib],
        libraries=["axle"],
        runtime_library_dirs=[lib],
        extra_compile_args=["-Wall", "-Wextra"],
    )


setup(
    ext_modules=[_extension()],
    cmdclass={"build": build, "build_ext": build_ext, "egg_info": egg_info},
)
