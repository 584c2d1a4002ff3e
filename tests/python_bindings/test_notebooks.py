"""Every notebook in notebooks/ runs headless (nbclient) without a cell error,
and is committed without outputs."""
import os
import sys

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
nbformat = pytest.importorskip(
    "nbformat", reason="nbformat not installed (pip install nbclient nbformat ipykernel matplotlib)")
nbclient = pytest.importorskip(
    "nbclient", reason="nbclient not installed (pip install nbclient nbformat ipykernel matplotlib)")
pytest.importorskip("ipykernel", reason="ipykernel not installed")
pytest.importorskip("matplotlib", reason="matplotlib not installed")


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01-quickstart.ipynb", "02-placement-and-devices.ipynb", "03-profiling.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = nbformat.read(str(path), as_version=4)
    # The kernel is this interpreter (ipykernel's native "python3" spec uses
    # sys.executable) with this environment plus: PYTHONPATH reaching the axle
    # package under test, a headless matplotlib backend, the repository root.
    env = dict(os.environ)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"   # figures as outputs
    env.setdefault("AXLE_SOURCE_DIR", str(ROOT))
    path_entries = [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(
        dict.fromkeys([p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p] + path_entries))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)   # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert images, "no figure was drawn"
    if os.environ.get("AXLE_NOTEBOOK_OUT"):   # keep executed copies for a look
        os.makedirs(os.environ["AXLE_NOTEBOOK_OUT"], exist_ok=True)
        nbformat.write(nb, os.path.join(os.environ["AXLE_NOTEBOOK_OUT"], path.name))
