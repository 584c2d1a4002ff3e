"""Type stubs for the axle package (Python bindings of the Axle accelerator SDK)."""
import os
from dataclasses import dataclass
from typing import (Any, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, Type,
                    Union)

import numpy as np
import numpy.typing as npt

from . import _axle

__version__: str

_PathLike = Union[str, "os.PathLike[str]"]
_Feeds = Mapping[str, Union[npt.ArrayLike, "Buffer"]]

class Error(Exception):
    """Base of every Axle failure: .code (status code), .status (name), .message."""
    code: int
    status: str
    message: str
    def __init__(self, message: str = ..., code: Optional[int] = ...) -> None: ...

class InvalidArgument(Error, ValueError):
    """A bad argument (wrong dtype or shape, unknown option, closed session)."""

class NotFound(Error, KeyError):
    """An input, output or device name that does not exist."""

class ModelFileNotFound(NotFound, FileNotFoundError):
    """The model file does not exist."""

class Unsupported(Error, NotImplementedError):
    """Something no device supports (strict placement, op, dtype)."""

class OutOfMemory(Error, MemoryError):
    """Host or device memory ran out."""

class IOFailure(Error, OSError):
    """Reading or writing a file failed."""

class InvalidModel(Error, ValueError):
    """Not a valid ONNX model Axle can load."""

class DeviceError(Error):
    """A device or its plugin failed."""

class Timeout(Error, TimeoutError):
    """A run passed its deadline, or result(timeout) expired first."""

class Cancelled(Error):
    """The run was cancelled."""

class Busy(Error):
    """The device or object is busy."""

class ABIMismatch(Error):
    """A plugin speaks an incompatible ABI."""

class InternalError(Error):
    """An internal error in Axle."""

class Pending(Error):
    """The run has not completed yet."""

class ResourceExhausted(Error):
    """A limited resource ran out."""

_ERRORS: Dict[int, Type[Error]]

@dataclass(frozen=True)
class Device:
    """A device of a loaded plugin."""
    name: str
    plugin: str
    kind: str
    emulated: bool
    memory: int
    description: str = ...
    dtypes: Tuple[str, ...] = ...

@dataclass(frozen=True)
class Plugin:
    """A loaded HAL plugin."""
    name: str
    description: str
    path: str
    abi_version: int
    features: int

def devices() -> List[Device]:
    """The devices of every loaded plugin."""
def plugins() -> List[Plugin]:
    """The loaded plugins."""
def diagnostics() -> List[str]:
    """Messages of plugins that were found but refused."""
def load_plugin(path: _PathLike) -> None:
    """Loads one more HAL plugin by path."""
def library_path() -> Optional[str]:
    """File name of the libaxle in use."""

@dataclass(frozen=True)
class Quantization:
    """Per-tensor or per-channel quantization parameters."""
    scales: Tuple[float, ...]
    zero_points: Tuple[int, ...]
    axis: int

@dataclass(frozen=True)
class TensorInfo:
    """A session input or output."""
    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype[Any]
    quantization: Optional[Quantization] = ...
    @property
    def type(self) -> str:
        """Element type name in Axle's spelling."""

@dataclass(frozen=True)
class SessionStats:
    """Memory plan and partitioning of a session."""
    planned_peak_bytes: int
    unplanned_bytes: int
    partition_count: int
    node_count: int

class Session(_axle.Session):
    """An ONNX model placed on devices, ready to run."""
    def __init__(self, path: Union[_PathLike, bytes, bytearray, memoryview],
                 devices: Optional[Union[str, Sequence[str]]] = ..., strict: bool = ...,
                 threads: Optional[int] = ..., profile: bool = ..., *,
                 constants: Optional[Mapping[str, npt.ArrayLike]] = ...,
                 input_shapes: Optional[Mapping[str, Sequence[int]]] = ...) -> None: ...
    @property
    def inputs(self) -> Tuple[TensorInfo, ...]:
        """The inputs to give to run()."""
    @property
    def outputs(self) -> Tuple[TensorInfo, ...]:
        """The model outputs."""
    def get_inputs(self) -> List[TensorInfo]:
        """ONNX Runtime spelling of inputs."""
    def get_outputs(self) -> List[TensorInfo]:
        """ONNX Runtime spelling of outputs."""
    @property
    def path(self) -> Optional[str]:
        """The model file, or None for a model given as bytes."""
    def run(self, output_names: Optional[Sequence[str]], input_feed: _Feeds,
            timeout: Optional[float] = ...) -> List[np.ndarray]:
        """Runs synchronously (GIL released); returns the outputs as numpy arrays."""
    def run_async(self, output_names: Optional[Sequence[str]] = ...,
                  input_feed: Optional[_Feeds] = ...,
                  timeout: Optional[float] = ...) -> "AsyncRun":
        """Starts a run; returns an awaitable AsyncRun at once."""
    def placement(self, text: bool = ...) -> Any:
        """The placement report: a dict (JSON) or, with text=True, a str."""
    def trace(self, path: Optional[_PathLike] = ...) -> Any:
        """Writes the Chrome trace to path (returns it) or returns the parsed trace dict."""
    def clear_trace(self) -> None:
        """Drops the recorded trace events."""
    @property
    def stats(self) -> SessionStats:
        """Memory plan and partitioning."""
    @property
    def closed(self) -> bool:
        """True after close()."""
    def close(self) -> None:
        """Releases the session (after runs in flight); outputs stay valid."""
    def __enter__(self) -> "Session": ...
    def __exit__(self, *exc: object) -> bool: ...

class AsyncRun:
    """An asynchronous run: awaitable, or result()/done()/wait()/cancel()."""
    def __init__(self, run: _axle.AsyncRun) -> None: ...
    def done(self) -> bool:
        """True once the run has completed; never blocks."""
    def wait(self, timeout: Optional[float] = ...) -> bool:
        """Waits up to timeout seconds; True if completed."""
    def result(self, timeout: Optional[float] = ...) -> List[np.ndarray]:
        """The outputs; raises the run's Error or Timeout."""
    def cancel(self) -> bool:
        """Asks the run to stop; True if it was still pending."""
    def fileno(self) -> int:
        """A descriptor readable once the run completes."""
    def __await__(self) -> Generator[Any, None, List[np.ndarray]]: ...

class Buffer(_axle.Buffer):
    """Device memory mapped into the host: buffer protocol and DLPack (kDLCPU)."""
    def __init__(self, shape: Union[int, Sequence[int]], dtype: npt.DTypeLike = ...,
                 device: str = ...) -> None: ...
    @classmethod
    def from_array(cls, array: npt.ArrayLike, device: str = ...) -> "Buffer":
        """A new buffer on device holding a copy of array."""
    @property
    def dtype(self) -> np.dtype[Any]:
        """Element type as a numpy dtype."""
    def numpy(self) -> np.ndarray:
        """A numpy array viewing the buffer (no copy)."""
