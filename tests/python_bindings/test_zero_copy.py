"""Zero copy, proven by pointer identity, and output lifetimes."""
import gc

import numpy as np

import axle
from axle import _axle


def data_ptr(arr):
    return arr.__array_interface__["data"][0]


def test_inputs_are_read_in_place(add_model):
    sess = axle.Session(add_model)
    a = np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)
    b = np.ones((1, 1000), np.float32)
    sess.run(None, {"a": a, "b": b})
    bound = sess._last_input_pointers()
    # The pointers Axle bound to the run (axle_tensor_data of the wrapped
    # tensors) are the arrays' own memory.
    assert bound == {"a": data_ptr(a), "b": data_ptr(b)}


def test_input_views_read_in_place(add_model):
    """A C-contiguous view into a bigger array is read where it lies."""
    sess = axle.Session(add_model)
    big = np.arange(3000, dtype=np.float32).reshape(3, 1000)
    row = big[1:2]
    assert row.flags.c_contiguous and not row.flags.owndata
    (c,) = sess.run(None, {"a": row, "b": row})
    assert sess._last_input_pointers()["a"] == data_ptr(big) + 4000
    np.testing.assert_array_equal(c, 2 * row)


def test_converted_inputs_are_not_the_callers_memory(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float64)             # wrong dtype: a converted copy is bound
    b = np.ones((1, 2000), np.float32)[:, ::2]     # non-contiguous: copied
    sess.run(None, {"a": a, "b": b})
    bound = sess._last_input_pointers()
    assert bound["a"] != data_ptr(a) and bound["b"] != data_ptr(b)


def test_outputs_view_axle_tensor_memory(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    (c,) = sess.run(None, {"a": a, "b": a})
    owner = c.base.obj if isinstance(c.base, memoryview) else c.base
    assert isinstance(owner, _axle.Tensor)
    assert owner.exports == 1
    p = data_ptr(c)
    assert p == owner.data_ptr == _axle._tensor_data_ptr(c)
    c += 1                                      # writable, in place
    assert data_ptr(c) == p and np.all(c == 3)
    assert c.flags.writeable and c.flags.c_contiguous


def test_export_count_tracks_views(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    (c,) = sess.run(None, {"a": a, "b": a})
    owner = c.base.obj
    m = memoryview(owner)
    v2 = np.asarray(owner)
    assert owner.exports == 3
    assert data_ptr(v2) == data_ptr(c)
    del m, v2
    gc.collect()
    assert owner.exports == 1


def test_outputs_survive_session_close(add_model, cnn_model):
    sess = axle.Session(add_model)
    a = np.full((1, 1000), 1.5, np.float32)
    (c,) = sess.run(None, {"a": a, "b": a})
    p = data_ptr(c)
    sess.close()
    del sess
    gc.collect()
    # Other sessions allocate and free; the output keeps its own tensor.
    other = axle.Session(cnn_model)
    for _ in range(20):
        other.run(None, {"x": np.zeros((2, 3, 16, 16), np.float32)})
    del other
    gc.collect()
    assert data_ptr(c) == p
    np.testing.assert_array_equal(c, np.full((1, 1000), 3.0, np.float32))


def test_async_outputs_survive_session_close(add_model):
    sess = axle.Session(add_model)
    a = np.full((1, 1000), 2.0, np.float32)
    run = sess.run_async(None, {"a": a, "b": a})
    sess.close()                     # deferred until the run finishes
    (c,) = run.result(timeout=30)
    del run, sess
    gc.collect()
    np.testing.assert_array_equal(c, 4.0)


def test_each_run_returns_fresh_outputs(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    (c1,) = sess.run(None, {"a": a, "b": a})
    (c2,) = sess.run(None, {"a": a, "b": 2 * a})
    assert data_ptr(c1) != data_ptr(c2)
    assert np.all(c1 == 2) and np.all(c2 == 3)
