"""Axle from Python: run ONNX models on the devices of Axle's HAL plugins.

ONNX-Runtime-like usage::

    import numpy as np
    import axle

    sess = axle.Session("examples/digits/digits.onnx", devices=["cpu"])
    (scores,) = sess.run(None, {"image": np.zeros((1, 1, 8, 8), np.float32)})

* Inputs that are C-contiguous and of the input's dtype are read in place
  (buffer protocol); anything else is converted with numpy first.
* Outputs are numpy arrays viewing the Axle output tensors (no copy); they stay
  valid after the session is closed.
* The GIL is released while a run executes, so Python threads overlap.
* ``Session.run_async`` returns an :class:`AsyncRun`, awaitable in asyncio
  (the completion event's file descriptor is watched by the event loop) and
  usable without asyncio (``result()``, ``done()``, ``cancel()``).
* Failures raise subclasses of :class:`Error` carrying the Axle status code and
  the detailed message; most also derive from the matching built-in exception
  (``InvalidArgument`` is a ``ValueError``, ``NotFound`` a ``KeyError``, ...).
"""
import asyncio
import errno
import json
import os
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import _axle

__all__ = [
    "__version__", "devices", "plugins", "diagnostics", "load_plugin", "library_path",
    "Device", "Plugin", "TensorInfo", "Quantization", "SessionStats", "Session", "AsyncRun",
    "Buffer", "Error", "InvalidArgument", "NotFound", "ModelFileNotFound", "Unsupported",
    "OutOfMemory", "IOFailure", "InvalidModel", "DeviceError", "Timeout", "Cancelled", "Busy",
    "ABIMismatch", "InternalError", "Pending", "ResourceExhausted",
]

__version__ = "0.1.0"

# --------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------


class Error(Exception):
    """Base of every Axle failure.

    Attributes:
        code: the Axle status code (``axle_status_t``), an int.
        status: the status name (``"invalid argument"``, ...).
        message: the detailed message (names the plugin, device, node and
            tensor involved).
    """

    code = 12
    status = "internal"

    def __init__(self, message="", code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = int(code)
            self.status = _STATUS_NAMES.get(self.code, "status %d" % self.code)

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.code))


class InvalidArgument(Error, ValueError):
    """A bad argument (wrong dtype or shape, unknown option, closed session)."""
    code, status = 1, "invalid argument"


class NotFound(Error, KeyError):
    """Something named does not exist (an input, output or device name)."""
    code, status = 2, "not found"


class ModelFileNotFound(NotFound, FileNotFoundError):
    """The model file does not exist (also a FileNotFoundError)."""

    def __init__(self, message="", code=None):
        NotFound.__init__(self, message, code)
        self.errno = errno.ENOENT
        self.strerror = message


class Unsupported(Error, NotImplementedError):
    """The model or request needs something no device supports (strict placement, op, dtype)."""
    code, status = 3, "unsupported"


class OutOfMemory(Error, MemoryError):
    """Host or device memory ran out."""
    code, status = 4, "out of memory"


class IOFailure(Error, OSError):
    """Reading or writing a file failed."""
    code, status = 5, "io error"

    def __init__(self, message="", code=None):
        Error.__init__(self, message, code)


class InvalidModel(Error, ValueError):
    """The model file is not a valid ONNX model Axle can load."""
    code, status = 6, "invalid model"


class DeviceError(Error):
    """A device or its plugin failed."""
    code, status = 7, "device error"


class Timeout(Error, TimeoutError):
    """A run passed its deadline, or result(timeout) expired first."""
    code, status = 8, "timeout"

    def __init__(self, message="", code=None):
        Error.__init__(self, message, code)


class Cancelled(Error):
    """The run was cancelled (AsyncRun.cancel(), or its awaiting task was cancelled)."""
    code, status = 9, "cancelled"


class Busy(Error):
    """The device or object is busy."""
    code, status = 10, "busy"


class ABIMismatch(Error):
    """A plugin speaks an incompatible ABI."""
    code, status = 11, "abi mismatch"


class InternalError(Error):
    """An internal error in Axle."""
    code, status = 12, "internal"


class Pending(Error):
    """The run has not completed yet."""
    code, status = 13, "pending"


class ResourceExhausted(Error):
    """A limited resource (threads, file descriptors, queue slots) ran out."""
    code, status = 14, "resource exhausted"


_ERRORS = {c.code: c for c in (InvalidArgument, NotFound, Unsupported, OutOfMemory, IOFailure,
                               InvalidModel, DeviceError, Timeout, Cancelled, Busy, ABIMismatch,
                               InternalError, Pending, ResourceExhausted)}
_STATUS_NAMES = {c.code: c.status for c in _ERRORS.values()}

# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------

# Axle dtype codes (ONNX TensorProto numbering) -> numpy dtypes. numpy has no
# bfloat16: such tensors appear as uint16 words.
_NP_BY_CODE = {
    1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8),
    4: np.dtype(np.uint16), 5: np.dtype(np.int16), 6: np.dtype(np.int32),
    7: np.dtype(np.int64), 8: np.dtype(object), 9: np.dtype(np.bool_),
    10: np.dtype(np.float16), 11: np.dtype(np.float64), 12: np.dtype(np.uint32),
    13: np.dtype(np.uint64), 16: np.dtype(np.uint16),
}
_CODE_BY_NP = {v: k for k, v in _NP_BY_CODE.items() if k not in (8, 16)}


def _np_dtype(code):
    return _NP_BY_CODE.get(code, np.dtype("V1"))


def _code_of(dtype):
    dt = np.dtype(dtype)
    try:
        return _CODE_BY_NP[dt.newbyteorder("=")]
    except KeyError:
        raise Unsupported("numpy dtype %s has no Axle element type" % dt) from None


def _convert_input(name, value, code):
    """Called by the extension for inputs it cannot read in place: returns a
    C-contiguous array of the input's dtype (a copy)."""
    if code == 0:  # unknown input name: pass it on, the core names the inputs
        return np.ascontiguousarray(value)
    want = _np_dtype(code)
    arr = np.asarray(value)
    if arr.dtype != want:
        if code == 16 and arr.dtype == np.float32:  # float32 -> bfloat16 (truncate)
            return np.ascontiguousarray((arr.view(np.uint32) >> 16).astype(np.uint16))
        if not np.can_cast(arr.dtype, want, casting="same_kind"):
            raise InvalidArgument("input '%s' must be %s, got %s (cannot cast safely)"
                                  % (name, want, arr.dtype), 1)
        arr = arr.astype(want)
    return np.ascontiguousarray(arr)


_axle._setup(Error, _ERRORS, ModelFileNotFound, np.asarray, _convert_input)

# --------------------------------------------------------------------------
# Devices and plugins
# --------------------------------------------------------------------------

_KINDS = {0: "cpu", 1: "npu", 2: "dsp", 3: "fpga", 4: "gpu", 5: "other"}
_DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
                13: "uint64", 16: "bfloat16"}


@dataclass(frozen=True)
class Device:
    """A device of a loaded plugin.

    Attributes:
        name: unique device name (what ``Session(devices=[...])`` takes).
        plugin: name of the plugin providing it.
        kind: "cpu", "npu", "dsp", "fpga", "gpu" or "other".
        emulated: True for an emulator, False for real hardware.
        memory: device memory in bytes; 0 means it uses host memory.
        description: one line from the plugin.
        dtypes: element type names the device supports.
    """
    name: str
    plugin: str
    kind: str
    emulated: bool
    memory: int
    description: str = ""
    dtypes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Plugin:
    """A loaded HAL plugin: name, description, file path, negotiated ABI version, feature bits."""
    name: str
    description: str
    path: str
    abi_version: int
    features: int


def devices():
    """Returns the devices of every loaded plugin as a list of :class:`Device`.

    Plugins are discovered on first use: ``AXLE_PLUGIN_PATH`` first, then
    ``<libdir>/axle/plugins`` next to the libaxle in use."""
    out = []
    for name, desc, plugin, kind, emulated, memory, mask in _axle.devices():
        dts = tuple(n for c, n in sorted(_DTYPE_NAMES.items()) if mask >> c & 1)
        out.append(Device(name, plugin, _KINDS.get(kind, "other"), bool(emulated), int(memory),
                          desc, dts))
    return out


def plugins():
    """Returns the loaded plugins as a list of :class:`Plugin`."""
    return [Plugin(*p) for p in _axle.plugins()]


def diagnostics():
    """Returns the messages of plugins that were found but refused ("FILE: reason")."""
    return list(_axle.diagnostics())


def load_plugin(path):
    """Loads one more HAL plugin from a shared-library path; its devices join devices()."""
    _axle.load_plugin(os.fspath(path))


def library_path():
    """Returns the file name of the libaxle this package runs on."""
    return _axle.library_path()


# --------------------------------------------------------------------------
# Sessions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantization:
    """Quantization parameters of a tensor: one scale/zero point per tensor or per channel."""
    scales: Tuple[float, ...]
    zero_points: Tuple[int, ...]
    axis: int


@dataclass(frozen=True)
class TensorInfo:
    """A session input or output: name, concrete shape (tuple) and numpy dtype."""
    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    quantization: Optional[Quantization] = None

    @property
    def type(self):
        """The element type name in Axle's spelling ("float32", "bfloat16", ...)."""
        return self._type_name

    def __post_init__(self):
        object.__setattr__(self, "_type_name", str(self.dtype))


def _tensor_info(t):
    name, code, shape, quant = t
    info = TensorInfo(name, tuple(shape), _np_dtype(code),
                      Quantization(*quant) if quant else None)
    object.__setattr__(info, "_type_name", _DTYPE_NAMES.get(code, str(_np_dtype(code))))
    return info


@dataclass(frozen=True)
class SessionStats:
    """Memory plan and partitioning of a session."""
    planned_peak_bytes: int
    unplanned_bytes: int
    partition_count: int
    node_count: int


class Session(_axle.Session):
    """An ONNX model placed on devices, ready to run.

    Args:
        path: model file (str or os.PathLike), or the model's bytes.
        devices: device names in order of preference (see :func:`devices`);
            None means ``["cpu"]``. Nodes no listed device can run fall back
            to the CPU unless ``strict``.
        strict: no CPU fallback; a node that cannot be placed raises
            :class:`Unsupported`.
        threads: worker threads for the plugins (None: plugin default).
        profile: record per-node trace events (see :meth:`trace`).
        constants: ``{input name: array}`` fixed at creation (shape tensors
            and the like); such inputs are not passed to run().
        input_shapes: ``{input name: shape}`` for inputs with symbolic
            dimensions (unset symbolic dimensions become 1).

    Sessions may be run from several threads at once. ``close()`` (or the
    ``with`` statement) releases the session; outputs already returned stay
    valid.
    """

    def __init__(self, path, devices=None, strict=False, threads=None, profile=False, *,
                 constants=None, input_shapes=None):
        if isinstance(devices, str):
            devices = [devices]
        if threads is None:
            threads = 0
        elif int(threads) < 0:
            raise InvalidArgument("threads must be >= 0", 1)
        flags = (_axle.SESSION_STRICT if strict else 0) | (_axle.SESSION_PROFILE if profile else 0)
        if isinstance(path, (bytes, bytearray, memoryview)):
            model, self._path = path, None
        else:
            model = os.fspath(path)
            self._path = model
        if constants is not None:
            constants = dict(constants)
        if input_shapes is not None:
            input_shapes = {k: tuple(int(d) for d in v) for k, v in dict(input_shapes).items()}
        super().__init__(model, None if devices is None else list(devices), flags, int(threads),
                         constants, input_shapes)
        self._inputs = tuple(_tensor_info(t) for t in self._input_infos())
        self._outputs = tuple(_tensor_info(t) for t in self._output_infos())
        self._profile = bool(profile)

    @property
    def inputs(self):
        """The inputs to give to run(), as a tuple of :class:`TensorInfo` (concrete shapes)."""
        return self._inputs

    @property
    def outputs(self):
        """The model outputs, as a tuple of :class:`TensorInfo`."""
        return self._outputs

    def get_inputs(self):
        """ONNX Runtime spelling of :attr:`inputs` (a list)."""
        return list(self._inputs)

    def get_outputs(self):
        """ONNX Runtime spelling of :attr:`outputs` (a list)."""
        return list(self._outputs)

    @property
    def path(self):
        """The model file, or None for a model given as bytes."""
        return self._path

    def run_async(self, output_names=None, input_feed=None, timeout=None):
        """Starts a run and returns an :class:`AsyncRun` at once.

        Inputs are held (and read in place) until the run completes: do not
        write to them before. ``await`` the result in asyncio, or call
        ``result(timeout)`` from any thread.
        """
        return AsyncRun(self._submit(output_names, input_feed, timeout))

    def placement(self, text=False):
        """The placement report: which node went to which device and why.

        Returns the parsed JSON report (a dict with ``nodes``, ``partitions``,
        ``planned_peak_bytes``, ...) or, with ``text=True``, the text report.
        """
        if text:
            return self._placement_report(0)
        return json.loads(self._placement_report(1))

    def trace(self, path=None):
        """Profiling trace (sessions created with ``profile=True``).

        With a path: writes Chrome trace JSON there (open it in
        https://ui.perfetto.dev) and returns the path. Without: returns the
        parsed trace, a dict with ``traceEvents``. Raises
        :class:`InvalidArgument` for a session created without profiling.
        """
        if path is None:
            return json.loads(self._trace_json())
        path = os.fspath(path)
        self._trace_write(path)
        return path

    @property
    def stats(self):
        """Memory plan and partitioning (:class:`SessionStats`)."""
        return SessionStats(*self._stats())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else "%d inputs, %d outputs" % (
            len(self._inputs), len(self._outputs))
        return "<axle.Session %s (%s)>" % (self._path or "<bytes>", state)


class AsyncRun:
    """An asynchronous run started by :meth:`Session.run_async`.

    Awaitable in asyncio (``outputs = await run``): the run's completion file
    descriptor is watched with ``loop.add_reader``, so no thread waits. Usable
    without asyncio through :meth:`result`, :meth:`done`, :meth:`wait` and
    :meth:`cancel`. Cancelling the awaiting task cancels the run.
    """

    __slots__ = ("_run", "_waiter")

    def __init__(self, run):
        self._run = run
        self._waiter = None

    def done(self):
        """True once the run has completed (successfully or not); never blocks."""
        return self._run.done()

    def wait(self, timeout=None):
        """Waits (GIL released) up to ``timeout`` seconds (None: forever); True if completed."""
        return self._run.wait(timeout)

    def result(self, timeout=None):
        """The outputs (list of numpy arrays), waiting up to ``timeout`` seconds.

        Raises the run's :class:`Error` (:class:`Cancelled` after cancel()),
        or :class:`Timeout` when it is still running at the timeout.
        """
        return self._run.result(timeout)

    def cancel(self):
        """Asks the run to stop; returns True if it was still pending. It then
        completes with :class:`Cancelled` unless it finished first."""
        return self._run.cancel()

    def fileno(self):
        """A file descriptor that becomes readable when the run completes (owned by the run)."""
        return self._run.fileno()

    def _watch(self, loop):
        fut = loop.create_future()
        fd = self._run.fileno()

        def ready():
            loop.remove_reader(fd)
            if not fut.done():
                fut.set_result(None)

        try:
            loop.add_reader(fd, ready)
        except NotImplementedError:  # a loop without add_reader: wait in a thread
            return asyncio.ensure_future(loop.run_in_executor(None, self._run.wait), loop=loop)

        def on_done(f):
            if f.cancelled():
                loop.remove_reader(fd)

        fut.add_done_callback(on_done)
        return fut

    def __await__(self):
        run = self._run
        if not run.done():
            loop = asyncio.get_running_loop()
            w = self._waiter
            if w is None or w.cancelled() or w.get_loop() is not loop:
                w = self._waiter = self._watch(loop)
            try:
                yield from w.__await__()
            except asyncio.CancelledError:
                run.cancel()
                raise
        return run.result()

    def __repr__(self):
        return "<axle.AsyncRun %s>" % ("done" if self._run.done() else "pending")


# --------------------------------------------------------------------------
# Device buffers
# --------------------------------------------------------------------------


class Buffer(_axle.Buffer):
    """Memory allocated on a device (``axle_buffer_allocate``), mapped into the host.

    A typed, shaped block: ``Buffer((1, 1000), np.float32, device="cpu")``.
    Pass it to :meth:`Session.run` as an input (bound without a copy). It
    implements the buffer protocol and DLPack (``__dlpack__`` /
    ``__dlpack_device__``, reported as kDLCPU since the memory is host-mapped),
    so ``np.from_dlpack(buf)`` and ``np.asarray(buf)`` are views of it.
    """

    def __init__(self, shape, dtype=np.float32, device="cpu"):
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        super().__init__(tuple(int(d) for d in shape), _code_of(dtype), device)

    @classmethod
    def from_array(cls, array, device="cpu"):
        """A new buffer on ``device`` holding a copy of ``array``."""
        arr = np.ascontiguousarray(array)
        buf = cls(arr.shape, arr.dtype, device)
        buf.copy_from(arr)
        return buf

    @property
    def dtype(self):
        """Element type as a numpy dtype."""
        return _np_dtype(self._dtype_code)

    def numpy(self):
        """A numpy array viewing the buffer (no copy)."""
        return np.asarray(self)

    def __repr__(self):
        return "<axle.Buffer %s %s on %s>" % (self.shape, self.dtype, self.device)
