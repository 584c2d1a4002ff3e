"""The binding's C compiles warning-free (-Wall -Wextra -Werror); its Python
(package, stubs, tests, benchmark, notebook cells) passes pyflakes; every
public name has a docstring."""
import ast
import inspect
import os
import shutil
import subprocess
import sysconfig

import pytest

import axle
from conftest import ROOT

PY_DIRS = [ROOT / "bindings" / "python", ROOT / "tests" / "python_bindings", ROOT / "bench" / "bindings"]


def test_c_extension_compiles_without_warnings(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    src = ROOT / "bindings" / "python" / "src" / "_axle.c"
    cmd = [cc, "-c", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC",
           "-I" + sysconfig.get_paths()["include"], "-I" + str(ROOT / "core" / "include"),
           str(src), "-o", str(tmp_path / "_axle.o")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _pyflakes(tree, filename):
    checker = pytest.importorskip("pyflakes.checker")
    return ["%s:%d: %s" % (filename, m.lineno, m.message % m.message_args)
            for m in checker.Checker(tree, filename=filename).messages]


def test_python_passes_pyflakes():
    problems = []
    for d in PY_DIRS:
        for path in sorted(list(d.rglob("*.py")) + list(d.rglob("*.pyi"))):
            if "build" in path.relative_to(d).parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            problems += _pyflakes(tree, str(path))
    assert not problems, "\n".join(problems)


class _StripTopLevelAwait(ast.NodeTransformer):
    """IPython runs top-level `await`; pyflakes would call it a stray yield."""

    def visit_AsyncFunctionDef(self, node):
        return node                      # awaits inside coroutines are fine

    def visit_Await(self, node):
        return self.visit(node.value)


def test_notebook_cells_pass_pyflakes():
    nbformat = pytest.importorskip("nbformat")
    problems = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        src = "\n\n".join(c.source for c in nb.cells if c.cell_type == "code")
        tree = compile(src, str(path), "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        tree = ast.fix_missing_locations(_StripTopLevelAwait().visit(tree))
        problems += _pyflakes(tree, str(path))
    assert not problems, "\n".join(problems)


def test_public_names_have_docstrings():
    missing = []
    for name in axle.__all__:
        obj = getattr(axle, name)
        if name.startswith("__"):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                    continue
                if not inspect.getdoc(member):
                    missing.append("%s.%s" % (name, attr))
    for attr in ("run", "close", "clear_trace"):
        if not inspect.getdoc(getattr(axle.Session, attr)):
            missing.append("Session." + attr)
    assert not missing, missing


def test_stubs_and_marker_are_installed():
    pkg = os.path.dirname(axle.__file__)
    for f in ("py.typed", "__init__.pyi", "_axle.pyi"):
        assert os.path.exists(os.path.join(pkg, f)), f
