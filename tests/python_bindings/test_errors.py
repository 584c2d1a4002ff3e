"""Every status code maps to its exception class; real failures raise them."""
import asyncio
import errno
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import axle
from axle import _axle
from conftest import DIGITS, HEAVY_N, MODELS

# status code -> (class, built-in bases it must also be)
MAPPING = {
    1: (axle.InvalidArgument, (ValueError,)),
    2: (axle.NotFound, (KeyError,)),
    3: (axle.Unsupported, (NotImplementedError,)),
    4: (axle.OutOfMemory, (MemoryError,)),
    5: (axle.IOFailure, (OSError,)),
    6: (axle.InvalidModel, (ValueError,)),
    7: (axle.DeviceError, ()),
    8: (axle.Timeout, (TimeoutError,)),
    9: (axle.Cancelled, ()),
    10: (axle.Busy, ()),
    11: (axle.ABIMismatch, ()),
    12: (axle.InternalError, ()),
    13: (axle.Pending, ()),
    14: (axle.ResourceExhausted, ()),
}


@pytest.mark.parametrize("code", sorted(MAPPING))
def test_every_status_code_maps(code):
    cls, builtins = MAPPING[code]
    with pytest.raises(cls) as info:
        _axle._raise_status(code, "detail for %d" % code)
    e = info.value
    assert type(e) is cls and isinstance(e, axle.Error)
    for b in builtins:
        assert isinstance(e, b)
    assert e.code == code and e.message == "detail for %d" % code
    assert str(e) == e.message            # KeyError would quote it; ours does not
    assert e.status and e.status == cls.status


def test_unknown_future_code_is_plain_error():
    with pytest.raises(axle.Error) as info:
        _axle._raise_status(99, "from a newer libaxle")
    assert type(info.value) is axle.Error and info.value.code == 99


def test_cancelled_is_not_asyncio_cancelled():
    assert not issubclass(axle.Cancelled, asyncio.CancelledError)


def test_error_pickles():
    import pickle
    e = pickle.loads(pickle.dumps(axle.NotFound("gone", 2)))
    assert type(e) is axle.NotFound and e.code == 2 and e.message == "gone"


# ---------------------------------------------------------------- real failures

def test_missing_model_file():
    with pytest.raises(axle.ModelFileNotFound) as info:
        axle.Session("/nonexistent/model.onnx")
    e = info.value
    assert isinstance(e, FileNotFoundError) and isinstance(e, KeyError)
    assert e.errno == errno.ENOENT
    assert isinstance(e, axle.NotFound) and e.code == 2
    assert "/nonexistent/model.onnx" in e.message


def test_invalid_model():
    for bad in ("bad_garbage.onnx", "bad_truncated.onnx"):
        with pytest.raises(axle.InvalidModel) as info:
            axle.Session(MODELS / bad)
        assert isinstance(info.value, ValueError) and bad in info.value.message


def test_unknown_device():
    with pytest.raises(axle.NotFound) as info:
        axle.Session(DIGITS, devices=["no-such-device"])
    assert "no-such-device" in info.value.message and "cpu" in info.value.message


def test_unknown_input_and_output(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    with pytest.raises(KeyError) as info:
        sess.run(None, {"a": a, "bogus": a})
    assert isinstance(info.value, axle.NotFound) and "bogus" in str(info.value)
    with pytest.raises(axle.NotFound):
        sess.run(["nope"], {"a": a, "b": a})


def test_wrong_shape_and_missing_input(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    with pytest.raises(ValueError) as info:
        sess.run(None, {"a": np.ones((2, 500), np.float32), "b": a})
    assert isinstance(info.value, axle.InvalidArgument) and "[1,1000]" in info.value.message
    with pytest.raises(axle.InvalidArgument) as info:
        sess.run(None, {"a": a})
    assert "'b'" in info.value.message and "missing" in info.value.message


def test_uncastable_input(int_model):
    sess = axle.Session(int_model)
    with pytest.raises(axle.InvalidArgument) as info:
        sess.run(None, {"a": np.ones(3, np.float32), "b": np.ones(3, np.int64)})
    assert "int64" in info.value.message


def test_type_errors_for_misuse(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    with pytest.raises(TypeError):
        sess.run(None, [a, a])
    with pytest.raises(TypeError):
        sess.run("c", {"a": a, "b": a})
    with pytest.raises(TypeError):
        sess.run(None, {1: a, "b": a})
    with pytest.raises(TypeError):
        axle.Session(DIGITS, devices=5)


def test_bad_timeout_and_closed_session(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    with pytest.raises(axle.InvalidArgument):
        sess.run(None, {"a": a, "b": a}, timeout=0)
    sess.close()
    sess.close()                                    # idempotent
    with pytest.raises(axle.InvalidArgument) as info:
        sess.run(None, {"a": a, "b": a})
    assert "closed" in info.value.message
    with pytest.raises(axle.InvalidArgument):
        sess.placement()


def test_strict_placement_is_unsupported():
    if "ref" not in [d.name for d in axle.devices()]:
        pytest.skip("the reference plugin is not loaded")
    with pytest.raises(NotImplementedError) as info:
        axle.Session(MODELS / "mixed.onnx", devices=["ref"], strict=True)
    e = info.value
    assert isinstance(e, axle.Unsupported) and e.code == 3
    assert "conv" in e.message and "strict" in e.message


def test_unsupported_op():
    with pytest.raises(axle.Unsupported) as info:
        axle.Session(MODELS / "unsupported_op.onnx")
    assert info.value.message


def test_trace_without_profiling_and_io_failure(tmp_path):
    sess = axle.Session(DIGITS)
    with pytest.raises(axle.InvalidArgument) as info:
        sess.trace()
    assert "PROFILE" in info.value.message
    prof = axle.Session(DIGITS, profile=True)
    prof.run(None, {"image": np.zeros((1, 1, 8, 8), np.float32)})
    with pytest.raises(axle.IOFailure) as info:
        prof.trace(tmp_path / "no" / "such" / "dir" / "t.json")
    assert isinstance(info.value, OSError)


def test_run_timeout(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    with pytest.raises(axle.Timeout) as info:
        for _ in range(20):   # a run that outlives a 1 ms deadline
            sess.run(None, {"x": x}, timeout=0.001)
    assert isinstance(info.value, TimeoutError) and info.value.code == 8


def test_out_of_memory_buffer():
    with pytest.raises(axle.OutOfMemory) as info:
        axle.Buffer((1 << 62,), np.uint8)
    assert isinstance(info.value, MemoryError)


def test_unsupported_buffer_dtype():
    with pytest.raises(axle.Unsupported):
        axle.Buffer((4,), np.complex64)


def _run_isolated(code):
    """Runs code in a fresh interpreter (plugins loaded there stay there)."""
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not os.environ.get("AXLE_FAKE_PLUGIN_DIR"),
                    reason="AXLE_FAKE_PLUGIN_DIR not set (run through ctest)")
def test_abi_mismatch_and_device_error_from_fake_plugins():
    r = _run_isolated("""
        import os, numpy as np, axle
        d = os.environ["AXLE_FAKE_PLUGIN_DIR"]
        try:
            axle.load_plugin(os.path.join(d, "axle_plugin_fake_wrong_abi.so"))
        except axle.ABIMismatch as e:
            print("abi", e.code, isinstance(e, axle.Error))
        axle.load_plugin(os.path.join(d, "axle_plugin_fake_submit_fails.so"))
        s = axle.Session(os.path.join(os.environ["AXLE_SOURCE_DIR"], "tests/models/relu_chain.onnx"),
                         devices=["fakefail"])
        try:
            s.run(None, {"x": np.ones((1, 1000), np.float32)})
        except axle.DeviceError as e:
            print("device", e.code, "hung" in e.message)
        try:
            s.run_async(None, {"x": np.ones((1, 1000), np.float32)}).result(timeout=30)
        except axle.DeviceError as e:
            print("async", e.code)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert "abi 11 True" in lines and "device 7 True" in lines and "async 7" in lines, r.stdout
