"""Builds bindings/python against one Axle build tree and installs it into a
build-local directory (what ctest's python_bindings_install does).

usage: install_package.py SOURCE_DIR AXLE_BUILD_DIR SITE_DIR WORK_DIR

SOURCE_DIR is bindings/python; the package lands in SITE_DIR/axle (put SITE_DIR
on PYTHONPATH); WORK_DIR holds setuptools' build tree and egg-info, so the
source tree stays clean and two Axle build trees never share object files.
Uses `pip install --no-deps --no-build-isolation --target` (offline: the
installed setuptools builds it); where setuptools cannot build wheels by itself
(setuptools < 70.1 without the `wheel` package) it runs `setup.py build` and
copies the result instead. CFLAGS/LDFLAGS pass through (sanitizer builds).
"""
import glob
import importlib.util
import os
import shutil
import subprocess
import sys


def can_build_wheels():
    if importlib.util.find_spec("wheel") is not None:
        return True
    try:
        import setuptools
        major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
        return (major, minor) >= (70, 1)
    except Exception:
        return False


def main():
    src, build_dir, site, work = (os.path.abspath(a) for a in sys.argv[1:5])
    env = dict(os.environ, AXLE_BUILD_DIR=build_dir, AXLE_PY_BUILD_BASE=work,
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_ROOT_USER_ACTION="ignore")
    env.pop("AXLE_PREFIX", None)
    os.makedirs(site, exist_ok=True)
    for old in glob.glob(os.path.join(site, "axle")) + glob.glob(os.path.join(site, "axle-*")):
        shutil.rmtree(old, ignore_errors=True)
    if can_build_wheels():
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
               "--no-cache-dir", "--upgrade", "--target", site, src]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, env=env, check=True)
    else:
        cmd = [sys.executable, "setup.py", "build", "--build-base", work]
        print("+ (no wheel support)", " ".join(cmd), flush=True)
        subprocess.run(cmd, env=env, check=True, cwd=src)
        built = glob.glob(os.path.join(work, "lib*", "axle"))
        if len(built) != 1:
            sys.exit("install_package: expected one built package under %s, found %s" % (work, built))
        shutil.copytree(built[0], os.path.join(site, "axle"))
    ext = glob.glob(os.path.join(site, "axle", "_axle*.so"))
    if not ext:
        sys.exit("install_package: no extension module in %s" % os.path.join(site, "axle"))
    print("installed", ext[0])


if __name__ == "__main__":
    main()
