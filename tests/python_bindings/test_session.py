"""axle.Session: results agree with ONNX Runtime; the ONNX-Runtime-like API."""
import json

import numpy as np
import pytest

import axle
from conftest import DIGITS

ort = pytest.importorskip("onnxruntime")


def ort_session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def test_devices_lists_cpu():
    devs = axle.devices()
    assert devs and all(isinstance(d, axle.Device) for d in devs)
    cpu = next(d for d in devs if d.name == "cpu")
    assert cpu.kind == "cpu" and cpu.plugin == "cpu" and cpu.emulated is False
    assert cpu.memory == 0 and "float32" in cpu.dtypes
    assert any(p.name == "cpu" for p in axle.plugins())
    assert isinstance(axle.diagnostics(), list)
    assert axle.library_path() and "libaxle" in axle.library_path()


def test_digits_agree_with_onnxruntime(digit_samples):
    images, labels = digit_samples
    sess = axle.Session(DIGITS)
    ref = ort_session(DIGITS)
    (inp,) = sess.inputs
    assert inp.name == "image" and inp.shape == (1, 1, 8, 8) and inp.dtype == np.float32
    assert [o.name for o in sess.outputs] == ["scores"]
    correct = 0
    for image, label in zip(images, labels):
        x = image[None]
        (got,) = sess.run(None, {"image": x})
        (want,) = ref.run(None, {"image": x})
        assert got.shape == (1, 10) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        correct += int(got.argmax()) == label
    assert correct >= len(labels) - 1


@pytest.mark.parametrize("which", ["cnn", "mlp"])
def test_random_models_agree_with_onnxruntime(which, cnn_model, mlp_model):
    path = {"cnn": cnn_model, "mlp": mlp_model}[which]
    sess, ref = axle.Session(path), ort_session(path)
    rng = np.random.default_rng(7)
    for _ in range(5):
        feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in sess.inputs}
        got = sess.run(None, feeds)
        want = ref.run(None, feeds)
        assert len(got) == len(want) == len(sess.outputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_output_names_select_and_order(cnn_model):
    sess = axle.Session(cnn_model)
    x = np.random.default_rng(0).standard_normal((2, 3, 16, 16)).astype(np.float32)
    probs, logits = sess.run(None, {"x": x})
    (only_logits,) = sess.run(["logits"], {"x": x})
    np.testing.assert_array_equal(only_logits, logits)
    l2, p2 = sess.run(["logits", "probs"], {"x": x})
    np.testing.assert_array_equal(l2, logits)
    np.testing.assert_array_equal(p2, probs)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_keyword_arguments_and_mapping_feeds(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    (c,) = sess.run(output_names=None, input_feed={"a": a, "b": a})
    np.testing.assert_array_equal(c, 2 * a)
    (c,) = sess.run(None, {"a": a, "b": a}, timeout=10.0)
    np.testing.assert_array_equal(c, 2 * a)

    class Feeds(dict):
        pass

    (c,) = sess.run(None, Feeds(a=a, b=a))
    np.testing.assert_array_equal(c, 2 * a)


def test_inputs_converted_when_not_in_place(add_model):
    sess = axle.Session(add_model)
    a64 = np.arange(1000, dtype=np.float64).reshape(1, 1000)        # wrong dtype: converted
    b_nc = np.ones((1000, 2), np.float32)[:, 0].reshape(1, 1000)     # a copy already
    strided = np.ones((1, 2000), np.float32)[:, ::2]                  # non-contiguous
    (c,) = sess.run(None, {"a": a64, "b": strided})
    np.testing.assert_allclose(c, a64 + 1)
    (c,) = sess.run(None, {"a": a64.tolist(), "b": b_nc})             # nested lists
    np.testing.assert_allclose(c, a64 + 1)


def test_integer_model_dtypes(int_model):
    sess = axle.Session(int_model)
    assert sess.inputs[0].dtype == np.int64
    a = np.array([1, 2, 3], np.int64)
    (c,) = sess.run(None, {"a": a, "b": np.array([10, 20, 30], np.int32)})  # int32 cast up
    assert c.dtype == np.int64 and c.dtype.type is np.int64
    assert c.tolist() == [11, 22, 33]


def test_model_from_bytes_and_pathlike(add_model):
    by_bytes = axle.Session(add_model.read_bytes())
    by_path = axle.Session(add_model)
    assert by_bytes.path is None and by_path.path == str(add_model)
    a = np.full((1, 1000), 2.0, np.float32)
    np.testing.assert_array_equal(by_bytes.run(None, {"a": a, "b": a})[0],
                                  by_path.run(None, {"a": a, "b": a})[0])


def test_placement_report_and_stats():
    sess = axle.Session(DIGITS, devices=["cpu"])
    report = sess.placement()
    assert isinstance(report, dict)
    assert [n["device"] for n in report["nodes"]] == ["cpu"] * len(report["nodes"])
    assert [(p["device"], p["nodes"]) for p in report["partitions"]] == [
        ("cpu", len(report["nodes"]))]
    text = sess.placement(text=True)
    assert "placement of" in text and "conv1" in text
    st = sess.stats
    assert isinstance(st, axle.SessionStats)
    assert st.node_count == len(report["nodes"]) and st.partition_count == 1
    assert 0 < st.planned_peak_bytes <= st.unplanned_bytes


def test_mixed_placement_with_reference_device():
    if "ref" not in [d.name for d in axle.devices()]:
        pytest.skip("the reference plugin is not loaded")
    from conftest import MODELS
    sess = axle.Session(MODELS / "mixed.onnx", devices=["ref"])   # cpu only as fallback
    nodes = {n["name"]: n for n in sess.placement()["nodes"]}
    assert nodes["conv"]["device"] == "cpu" and nodes["conv"]["state"] == "fallback"
    assert nodes["relu"]["device"] == "ref"
    x = np.random.default_rng(1).standard_normal(sess.inputs[0].shape).astype(np.float32)
    (y_ref,) = sess.run(None, {"x": x})
    (y_cpu,) = axle.Session(MODELS / "mixed.onnx").run(None, {"x": x})
    np.testing.assert_allclose(y_ref, y_cpu, rtol=1e-5, atol=1e-6)


def test_profile_trace(tmp_path):
    sess = axle.Session(DIGITS, profile=True)
    x = np.zeros((1, 1, 8, 8), np.float32)
    for _ in range(3):
        sess.run(None, {"image": x})
    trace = sess.trace()
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    names = {e["name"] for e in events}
    assert {"conv1", "fc", "softmax"} <= names
    path = sess.trace(tmp_path / "t.json")
    assert path == str(tmp_path / "t.json")
    with open(path) as f:
        assert json.load(f)["traceEvents"]
    sess.clear_trace()
    assert not [e for e in sess.trace()["traceEvents"] if e.get("name") == "conv1"]


def test_threads_option_and_context_manager(cnn_model):
    with axle.Session(cnn_model, threads=1) as sess:
        assert not sess.closed
        sess.run(None, {"x": np.zeros((2, 3, 16, 16), np.float32)})
    assert sess.closed
    assert "closed" in repr(sess)


def test_constants_and_input_shapes(tmp_path):
    """constants= freezes an input; input_shapes= makes symbolic dimensions concrete."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Relu", ["r"], ["y"])], "reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    import onnx
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "reshape.onnx"))
    sess = axle.Session(tmp_path / "reshape.onnx", constants={"shape": np.array([3, 4], np.int64)},
                        input_shapes={"x": (2, 6)})
    assert [i.name for i in sess.inputs] == ["x"] and sess.inputs[0].shape == (2, 6)
    x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0).reshape(3, 4))


def test_buffer_dlpack_and_as_input(add_model):
    buf = axle.Buffer((1, 1000), np.float32, device="cpu")
    assert buf.shape == (1, 1000) and buf.dtype == np.float32 and buf.nbytes == 4000
    assert buf.__dlpack_device__() == (1, 0)   # kDLCPU
    view = np.from_dlpack(buf)
    assert view.shape == (1, 1000) and view.dtype == np.float32
    assert view.__array_interface__["data"][0] == buf.data_ptr
    view[:] = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(buf), view)       # buffer protocol: same memory
    copied = np.from_dlpack(buf, copy=True)
    assert copied.__array_interface__["data"][0] != buf.data_ptr
    np.testing.assert_array_equal(copied, view)
    # Legacy (unversioned) capsule and the versioned one.
    assert "dltensor" in repr(buf.__dlpack__())
    assert "dltensor_versioned" in repr(buf.__dlpack__(max_version=(1, 0)))
    with pytest.raises(BufferError):
        buf.__dlpack__(dl_device=(2, 0))
    # A device buffer is bound as a run input without a copy.
    sess = axle.Session(add_model)
    ones = axle.Buffer.from_array(np.ones((1, 1000), np.float32))
    (c,) = sess.run(None, {"a": buf, "b": ones})
    np.testing.assert_array_equal(c, view + 1)
    assert sess._last_input_pointers()["a"] == buf.data_ptr
    out = np.empty((1, 1000), np.float32)
    buf.copy_to(out)
    np.testing.assert_array_equal(out, view)
    del view, copied
    assert buf._exports == 0


def test_buffer_outlives_dlpack_consumer_references():
    buf = axle.Buffer(16, np.int32)
    arr = np.from_dlpack(buf)
    arr[:] = 7
    del buf            # the array's DLPack deleter holds the buffer
    assert arr.sum() == 7 * 16


def test_many_inputs_and_outputs(tmp_path):
    """More than the extension's inline slots (8): heap-allocated bookkeeping."""
    import onnx
    from onnx import TensorProto, helper
    n = 11
    nodes = [helper.make_node("Add", ["x%d" % i, "x%d" % i], ["y%d" % i]) for i in range(n)]
    nodes.append(helper.make_node("Sum", ["x%d" % i for i in range(n)], ["total"]))
    graph = helper.make_graph(
        nodes, "many",
        [helper.make_tensor_value_info("x%d" % i, TensorProto.FLOAT, [4]) for i in range(n)],
        [helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, [4]) for i in range(n)]
        + [helper.make_tensor_value_info("total", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "many.onnx"))
    sess = axle.Session(tmp_path / "many.onnx")
    feeds = {"x%d" % i: np.full(4, i, np.float32) for i in range(n)}
    names = ["total"] + ["y%d" % i for i in reversed(range(n))]
    outs = sess.run(names, feeds)
    assert len(outs) == n + 1
    np.testing.assert_array_equal(outs[0], np.full(4, sum(range(n)), np.float32))
    for k, i in enumerate(reversed(range(n))):
        np.testing.assert_array_equal(outs[k + 1], np.full(4, 2 * i, np.float32))
    async_outs = sess.run_async(names, feeds).result(timeout=30)
    for a, b in zip(outs, async_outs):
        np.testing.assert_array_equal(a, b)
    assert set(sess._last_input_pointers()) == set(feeds)
