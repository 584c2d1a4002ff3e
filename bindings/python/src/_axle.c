/*
 * axle._axle: the CPython extension behind the `axle` package.
 *
 * Written against the Python C API and the public Axle C API
 * (core/include/axle/axle.h) only; linked against libaxle. The pure-Python
 * layer (axle/__init__.py) adds argument normalisation, dataclasses, the
 * exception hierarchy and the asyncio glue, and registers those with this
 * module through _setup().
 *
 * Objects defined here:
 *   Session   an axle_session_t (subclassed by axle.Session in Python)
 *   Tensor    owns one axle_tensor_t reference and exports its memory with
 *             the buffer protocol; outputs are numpy arrays viewing it
 *   AsyncRun  an axle_event_t plus the inputs it reads (Py_buffers held
 *             until the run completes)
 *   Buffer    device memory (axle_buffer_allocate + map) with the buffer
 *             protocol and DLPack export
 *
 * Lifetimes: every Axle object is reference counted by the core
 * independently of the session that produced it, so a Tensor (and the numpy
 * arrays viewing it) outlives its session safely. Input memory is wrapped
 * with axle_tensor_wrap() without a release callback; the Python side keeps
 * the Py_buffer and releases it only after its own tensor reference is gone
 * and the run (sync or async) has finished, so the core never calls back
 * into Python from its worker threads.
 *
 * The GIL is released around session creation, run, event waits, buffer
 * copies and trace writes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "axle/axle.h"

/* ------------------------------------------------------------------------ */
/* DLPack (https://github.com/dmlc/dlpack, include/dlpack/dlpack.h, v1.0).  */
/* The structs are defined here from the public specification (ABI version  */
/* 1.0, same layout as DLPack 0.8 for DLManagedTensor).                     */
/* ------------------------------------------------------------------------ */

typedef enum { kDLCPU = 1 } DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ull << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ull << 1)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* ------------------------------------------------------------------------ */
/* Module state (single-phase init: one interpreter)                        */
/* ------------------------------------------------------------------------ */

#define MAX_STATUS 32
static PyObject* g_error_base;                 /* axle.Error */
static PyObject* g_error_classes[MAX_STATUS];  /* by status code */
static PyObject* g_file_not_found;             /* missing model file */
static PyObject* g_asarray;                    /* numpy.asarray */
static PyObject* g_converter;                  /* axle._convert_input */
static axle_runtime_t* g_runtime;              /* created on first use, never released:
                                                  buffers and sessions may outlive
                                                  everything else at exit */

#define FN(f) ((PyCFunction)(void (*)(void))(f))

static PyTypeObject SessionType;
static PyTypeObject TensorType;
static PyTypeObject AsyncRunType;
static PyTypeObject BufferType;

/* Raises the exception class registered for status with message (a copy of
 * the thread's axle_status_message() taken right after the failing call). */
static PyObject* raise_status_cls(PyObject* cls, axle_status_t st, const char* message) {
  if (!message || !*message) message = axle_status_string(st);
  if (!cls) {
    if (!g_error_base) {
      PyErr_Format(PyExc_RuntimeError, "axle: %s: %s", axle_status_string(st), message);
      return NULL;
    }
    cls = g_error_base;
  }
  PyObject* msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  if (!msg) return NULL;
  PyObject* code = PyLong_FromLong((long)st);
  if (!code) {
    Py_DECREF(msg);
    return NULL;
  }
  PyObject* exc = PyObject_CallFunctionObjArgs(cls, msg, code, NULL);
  Py_DECREF(msg);
  Py_DECREF(code);
  if (!exc) return NULL;
  PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

static PyObject* raise_status_msg(axle_status_t st, const char* message) {
  PyObject* cls = ((unsigned)st < MAX_STATUS) ? g_error_classes[st] : NULL;
  return raise_status_cls(cls, st, message);
}

/* For failures on the current thread with the GIL held. */
static PyObject* raise_status(axle_status_t st) {
  return raise_status_msg(st, axle_status_message());
}

/* Copies the calling thread's message (safe with the GIL released). */
static void copy_message(char* out, size_t n) {
  const char* m = axle_status_message();
  size_t len = strlen(m);
  if (len >= n) len = n - 1;
  memcpy(out, m, len);
  out[len] = 0;
}

static axle_runtime_t* get_runtime(void) {
  if (g_runtime) return g_runtime;
  axle_runtime_t* rt = NULL;
  axle_status_t st;
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS
  st = axle_runtime_create(NULL, &rt);
  if (st != AXLE_OK) copy_message(msg, sizeof msg);
  Py_END_ALLOW_THREADS
  if (st != AXLE_OK) {
    raise_status_msg(st, msg);
    return NULL;
  }
  if (g_runtime) { /* another thread won the race while the GIL was released */
    axle_runtime_release(rt);
    return g_runtime;
  }
  g_runtime = rt;
  return rt;
}

/* ------------------------------------------------------------------------ */
/* Element types                                                             */
/* ------------------------------------------------------------------------ */

/* PEP 3118 format of an element type (struct module characters, native). */
static const char* dtype_format(axle_dtype_t dt) {
  switch (dt) {
    case AXLE_DTYPE_F32: return "f";
    case AXLE_DTYPE_F64: return "d";
    case AXLE_DTYPE_F16: return "e";
    case AXLE_DTYPE_I8: return "b";
    case AXLE_DTYPE_U8: return "B";
    case AXLE_DTYPE_I16: return "h";
    case AXLE_DTYPE_U16: return "H";
    case AXLE_DTYPE_BF16: return "H"; /* numpy has no bfloat16: raw 16-bit words */
    case AXLE_DTYPE_I32: return "i";
    case AXLE_DTYPE_U32: return "I";
    case AXLE_DTYPE_I64: return sizeof(long) == 8 ? "l" : "q";
    case AXLE_DTYPE_U64: return sizeof(long) == 8 ? "L" : "Q";
    case AXLE_DTYPE_BOOL: return "?";
    default: return NULL;
  }
}

static axle_dtype_t int_dtype(int is_signed, Py_ssize_t size) {
  switch (size) {
    case 1: return is_signed ? AXLE_DTYPE_I8 : AXLE_DTYPE_U8;
    case 2: return is_signed ? AXLE_DTYPE_I16 : AXLE_DTYPE_U16;
    case 4: return is_signed ? AXLE_DTYPE_I32 : AXLE_DTYPE_U32;
    case 8: return is_signed ? AXLE_DTYPE_I64 : AXLE_DTYPE_U64;
    default: return AXLE_DTYPE_UNDEFINED;
  }
}

/* Element type of a buffer format in native byte order; UNDEFINED when it
 * is not one Axle has (the caller then converts through numpy). */
static axle_dtype_t dtype_from_format(const char* fmt, Py_ssize_t itemsize) {
  if (!fmt) return itemsize == 1 ? AXLE_DTYPE_U8 : AXLE_DTYPE_UNDEFINED;
  if (*fmt == '@' || *fmt == '=') {
    ++fmt;
  } else if (*fmt == '<') {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    ++fmt;
#else
    return AXLE_DTYPE_UNDEFINED;
#endif
  } else if (*fmt == '>' || *fmt == '!') {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    ++fmt;
#else
    return AXLE_DTYPE_UNDEFINED;
#endif
  }
  if (!fmt[0] || fmt[1]) return AXLE_DTYPE_UNDEFINED;
  axle_dtype_t dt;
  switch (fmt[0]) {
    case 'f': dt = AXLE_DTYPE_F32; break;
    case 'd': dt = AXLE_DTYPE_F64; break;
    case 'e': dt = AXLE_DTYPE_F16; break;
    case '?': dt = AXLE_DTYPE_BOOL; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
      dt = int_dtype(1, itemsize);
      break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
      dt = int_dtype(0, itemsize);
      break;
    default: return AXLE_DTYPE_UNDEFINED;
  }
  return (Py_ssize_t)axle_dtype_size(dt) == itemsize ? dt : AXLE_DTYPE_UNDEFINED;
}

static int dlpack_dtype(axle_dtype_t dt, DLDataType* out) {
  out->lanes = 1;
  out->bits = (uint8_t)(axle_dtype_size(dt) * 8);
  switch (dt) {
    case AXLE_DTYPE_F32: case AXLE_DTYPE_F64: case AXLE_DTYPE_F16:
      out->code = kDLFloat; return 0;
    case AXLE_DTYPE_BF16: out->code = kDLBfloat; return 0;
    case AXLE_DTYPE_I8: case AXLE_DTYPE_I16: case AXLE_DTYPE_I32: case AXLE_DTYPE_I64:
      out->code = kDLInt; return 0;
    case AXLE_DTYPE_U8: case AXLE_DTYPE_U16: case AXLE_DTYPE_U32: case AXLE_DTYPE_U64:
      out->code = kDLUInt; return 0;
    case AXLE_DTYPE_BOOL: out->code = kDLBool; return 0;
    default: return -1;
  }
}

static PyObject* shape_tuple(uint32_t rank, const int64_t* shape) {
  PyObject* t = PyTuple_New((Py_ssize_t)rank);
  if (!t) return NULL;
  for (uint32_t i = 0; i < rank; ++i) {
    PyObject* d = PyLong_FromLongLong((long long)shape[i]);
    if (!d) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, d);
  }
  return t;
}

/* Reads a sequence of ints into shape; returns rank or -1. */
static int parse_shape(PyObject* seq, int64_t* shape, const char* what) {
  PyObject* fast = PySequence_Fast(seq, "shape must be a sequence of ints");
  if (!fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > AXLE_MAX_RANK) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "%s: rank %zd exceeds %d", what, n, AXLE_MAX_RANK);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
    shape[i] = (int64_t)v;
  }
  Py_DECREF(fast);
  return (int)n;
}

/* ------------------------------------------------------------------------ */
/* Tensor: a buffer-exporting owner of one axle_tensor_t reference           */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  axle_tensor_t* tensor;   /* one reference, released in dealloc */
  void* data;
  Py_ssize_t nbytes;
  Py_ssize_t itemsize;
  int ndim;
  const char* format;
  Py_ssize_t exports;      /* live buffer exports (numpy arrays, memoryviews) */
  Py_ssize_t shape[AXLE_MAX_RANK];
  Py_ssize_t strides[AXLE_MAX_RANK];
} TensorObject;

/* Takes ownership of t (released even on failure). */
static PyObject* tensor_new(axle_tensor_t* t) {
  axle_dtype_t dt = axle_tensor_dtype(t);
  const char* fmt = dtype_format(dt);
  if (!fmt) {
    axle_tensor_release(t);
    return raise_status_msg(AXLE_STATUS_UNSUPPORTED,
                            "output element type has no Python buffer format");
  }
  TensorObject* self = PyObject_New(TensorObject, &TensorType);
  if (!self) {
    axle_tensor_release(t);
    return NULL;
  }
  self->tensor = t;
  self->data = axle_tensor_data(t);
  self->nbytes = (Py_ssize_t)axle_tensor_byte_size(t);
  self->itemsize = (Py_ssize_t)axle_dtype_size(dt);
  self->format = fmt;
  self->exports = 0;
  uint32_t rank = axle_tensor_rank(t);
  const int64_t* shape = axle_tensor_shape(t);
  self->ndim = (int)rank;
  Py_ssize_t stride = self->itemsize;
  for (int i = (int)rank - 1; i >= 0; --i) {
    self->shape[i] = (Py_ssize_t)shape[i];
    self->strides[i] = stride;
    stride *= (Py_ssize_t)shape[i];
  }
  if (!self->data && self->nbytes) {
    Py_DECREF(self);
    return raise_status_msg(AXLE_STATUS_DEVICE_ERROR, "output tensor has no host data");
  }
  return (PyObject*)self;
}

static void Tensor_dealloc(TensorObject* self) {
  axle_tensor_release(self->tensor);
  PyObject_Free(self);
}

static int Tensor_getbuffer(TensorObject* self, Py_buffer* view, int flags) {
  if (!view) {
    PyErr_SetString(PyExc_BufferError, "NULL view");
    return -1;
  }
  view->obj = (PyObject*)self;
  Py_INCREF(self);
  view->buf = self->data;
  view->len = self->nbytes;
  view->readonly = 0;
  view->itemsize = self->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char*)self->format : NULL;
  if (flags & PyBUF_ND) {
    view->ndim = self->ndim;
    view->shape = self->shape;
  } else {
    view->ndim = 1;
    view->shape = NULL;
  }
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  self->exports++;
  return 0;
}

static void Tensor_releasebuffer(TensorObject* self, Py_buffer* view) {
  (void)view;
  self->exports--;
}

static PyObject* Tensor_get_data_ptr(TensorObject* self, void* closure) {
  (void)closure;
  return PyLong_FromVoidPtr(axle_tensor_data(self->tensor));
}

static PyObject* Tensor_get_exports(TensorObject* self, void* closure) {
  (void)closure;
  return PyLong_FromSsize_t(self->exports);
}

static PyObject* Tensor_get_shape(TensorObject* self, void* closure) {
  (void)closure;
  return shape_tuple(axle_tensor_rank(self->tensor), axle_tensor_shape(self->tensor));
}

static PyObject* Tensor_get_dtype(TensorObject* self, void* closure) {
  (void)closure;
  return PyLong_FromLong((long)axle_tensor_dtype(self->tensor));
}

static PyGetSetDef Tensor_getset[] = {
    {"data_ptr", (getter)Tensor_get_data_ptr, NULL,
     "Address of the tensor's elements (axle_tensor_data()).", NULL},
    {"exports", (getter)Tensor_get_exports, NULL,
     "Number of live buffer exports (numpy arrays / memoryviews viewing it).", NULL},
    {"shape", (getter)Tensor_get_shape, NULL, "Shape as a tuple of ints.", NULL},
    {"dtype", (getter)Tensor_get_dtype, NULL, "Axle element type code (ONNX numbering).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyBufferProcs Tensor_as_buffer = {
    .bf_getbuffer = (getbufferproc)Tensor_getbuffer,
    .bf_releasebuffer = (releasebufferproc)Tensor_releasebuffer,
};

static PyTypeObject TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._axle.Tensor",
    .tp_basicsize = sizeof(TensorObject),
    .tp_dealloc = (destructor)Tensor_dealloc,
    .tp_as_buffer = &Tensor_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An Axle tensor (one reference) exported through the buffer protocol.\n\n"
              "Outputs of Session.run() are numpy arrays viewing one of these: the\n"
              "tensor is released when the last array (export) is gone.",
    .tp_getset = Tensor_getset,
};

/* numpy array viewing a new Tensor that owns t (ownership taken). */
static PyObject* array_from_tensor(axle_tensor_t* t) {
  PyObject* owner = tensor_new(t);
  if (!owner) return NULL;
  PyObject* arr = g_asarray ? PyObject_CallFunctionObjArgs(g_asarray, owner, NULL)
                            : (Py_INCREF(owner), owner);
  Py_DECREF(owner);
  return arr;
}

/* ------------------------------------------------------------------------ */
/* Buffer: device memory                                                     */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  axle_buffer_t* buffer;
  void* host;              /* mapped for the object's lifetime */
  uint64_t size;
  uint32_t device;
  axle_dtype_t dtype;
  int ndim;
  int64_t shape[AXLE_MAX_RANK];
  Py_ssize_t pshape[AXLE_MAX_RANK];
  Py_ssize_t pstrides[AXLE_MAX_RANK];
  Py_ssize_t exports;
  PyObject* device_name;
} BufferObject;

static int Buffer_init(BufferObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"shape", "dtype", "device", NULL};
  PyObject* shape_obj;
  int dtype = AXLE_DTYPE_F32;
  const char* device = "cpu";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|is:Buffer", kwlist, &shape_obj, &dtype,
                                   &device))
    return -1;
  if (self->buffer) {
    PyErr_SetString(PyExc_RuntimeError, "Buffer is already initialised");
    return -1;
  }
  int64_t shape[AXLE_MAX_RANK];
  int rank = parse_shape(shape_obj, shape, "Buffer");
  if (rank < 0) return -1;
  const char* fmt = dtype_format((axle_dtype_t)dtype);
  if (!fmt) {
    raise_status_msg(AXLE_STATUS_UNSUPPORTED, "Buffer: unsupported element type");
    return -1;
  }
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT, "Buffer: negative dimension");
      return -1;
    }
    count *= (uint64_t)shape[i];
  }
  uint64_t size = count * axle_dtype_size((axle_dtype_t)dtype);
  axle_runtime_t* rt = get_runtime();
  if (!rt) return -1;
  uint32_t index = 0;
  axle_status_t st = axle_runtime_device_find(rt, device, &index);
  if (st != AXLE_OK) {
    raise_status(st);
    return -1;
  }
  axle_buffer_t* b = NULL;
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS
  st = axle_buffer_allocate(rt, index, size ? size : 1, &b);
  if (st != AXLE_OK) copy_message(msg, sizeof msg);
  Py_END_ALLOW_THREADS
  if (st != AXLE_OK) {
    raise_status_msg(st, msg);
    return -1;
  }
  void* host = NULL;
  if ((st = axle_buffer_map(b, &host)) != AXLE_OK) {
    raise_status(st);
    axle_buffer_release(b);
    return -1;
  }
  self->device_name = PyUnicode_FromString(device);
  if (!self->device_name) {
    axle_buffer_unmap(b);
    axle_buffer_release(b);
    return -1;
  }
  self->buffer = b;
  self->host = host;
  self->size = size;
  self->device = index;
  self->dtype = (axle_dtype_t)dtype;
  self->ndim = rank;
  Py_ssize_t stride = (Py_ssize_t)axle_dtype_size((axle_dtype_t)dtype);
  for (int i = rank - 1; i >= 0; --i) {
    self->shape[i] = shape[i];
    self->pshape[i] = (Py_ssize_t)shape[i];
    self->pstrides[i] = stride;
    stride *= (Py_ssize_t)shape[i];
  }
  return 0;
}

static void Buffer_dealloc(BufferObject* self) {
  if (self->buffer) {
    axle_buffer_unmap(self->buffer);
    axle_buffer_release(self->buffer);
  }
  Py_XDECREF(self->device_name);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static int buffer_ready(BufferObject* self) {
  if (!self->buffer) {
    PyErr_SetString(PyExc_RuntimeError, "Buffer is not initialised");
    return 0;
  }
  return 1;
}

static int Buffer_getbuffer(BufferObject* self, Py_buffer* view, int flags) {
  if (!buffer_ready(self)) return -1;
  view->obj = (PyObject*)self;
  Py_INCREF(self);
  view->buf = self->host;
  view->len = (Py_ssize_t)self->size;
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)axle_dtype_size(self->dtype);
  view->format = (flags & PyBUF_FORMAT) ? (char*)dtype_format(self->dtype) : NULL;
  if (flags & PyBUF_ND) {
    view->ndim = self->ndim;
    view->shape = self->pshape;
  } else {
    view->ndim = 1;
    view->shape = NULL;
  }
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? self->pstrides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  self->exports++;
  return 0;
}

static void Buffer_releasebuffer(BufferObject* self, Py_buffer* view) {
  (void)view;
  self->exports--;
}

/* DLPack export. manager_ctx holds a strong reference to the Buffer (or,
 * for copies, NULL: the data lives in the same allocation). */
typedef struct {
  DLManagedTensorVersioned m;
  DLManagedTensor legacy;
  int versioned;
  int64_t shape[AXLE_MAX_RANK];
  int64_t strides[AXLE_MAX_RANK];
} dl_export_t;

static void dl_free_export(dl_export_t* e) {
  PyObject* owner = (PyObject*)(e->versioned ? e->m.manager_ctx : e->legacy.manager_ctx);
  if (owner) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(g);
  }
  PyMem_RawFree(e);
}

static void dl_deleter_versioned(DLManagedTensorVersioned* m) {
  dl_free_export((dl_export_t*)((char*)m - offsetof(dl_export_t, m)));
}

static void dl_deleter_legacy(DLManagedTensor* m) {
  dl_free_export((dl_export_t*)((char*)m - offsetof(dl_export_t, legacy)));
}

static void dl_capsule_destructor(PyObject* capsule) {
  /* Renamed to used_dltensor* by a consumer that took ownership. */
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    DLManagedTensorVersioned* m =
        (DLManagedTensorVersioned*)PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    DLManagedTensor* m = (DLManagedTensor*)PyCapsule_GetPointer(capsule, "dltensor");
    if (m && m->deleter) m->deleter(m);
  }
}

static PyObject* Buffer_dlpack(BufferObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", kwlist, &stream,
                                   &max_version, &dl_device, &copy))
    return NULL;
  if (!buffer_ready(self)) return NULL;
  if (stream != Py_None) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: stream must be None for host memory");
    return NULL;
  }
  if (dl_device != Py_None) {
    int type = 0, id = 0;
    if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &type, &id)) return NULL;
    if (type != kDLCPU || id != 0) {
      PyErr_Format(PyExc_BufferError, "__dlpack__: cannot export to device (%d, %d)", type, id);
      return NULL;
    }
  }
  int versioned = 0;
  if (max_version != Py_None) {
    unsigned int major = 0, minor = 0;
    if (!PyArg_ParseTuple(max_version, "II:max_version", &major, &minor)) return NULL;
    versioned = major >= DLPACK_MAJOR_VERSION;
  }
  int do_copy = 0;
  if (copy != Py_None) {
    do_copy = PyObject_IsTrue(copy);
    if (do_copy < 0) return NULL;
  }
  DLDataType dt;
  if (dlpack_dtype(self->dtype, &dt) != 0) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: element type has no DLPack code");
    return NULL;
  }
  size_t data_at = (sizeof(dl_export_t) + 63) & ~(size_t)63;
  dl_export_t* e = (dl_export_t*)PyMem_RawCalloc(1, do_copy ? data_at + self->size + 64 : sizeof *e);
  if (!e) return PyErr_NoMemory();
  void* data = self->host;
  if (do_copy) {
    /* PyMem_RawCalloc gives at least 16-byte alignment; align the copy to 64. */
    uintptr_t p = ((uintptr_t)e + data_at + 63) & ~(uintptr_t)63;
    data = (void*)p;
    void* src = self->host;
    size_t n = (size_t)self->size;
    Py_BEGIN_ALLOW_THREADS
    memcpy(data, src, n);
    Py_END_ALLOW_THREADS
  }
  int64_t stride = 1;
  for (int i = self->ndim - 1; i >= 0; --i) {
    e->shape[i] = self->shape[i];
    e->strides[i] = stride;
    stride *= self->shape[i];
  }
  DLTensor* t = versioned ? &e->m.dl_tensor : &e->legacy.dl_tensor;
  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = self->ndim;
  t->dtype = dt;
  t->shape = e->shape;
  t->strides = e->strides;
  t->byte_offset = 0;
  e->versioned = versioned;
  PyObject* owner = do_copy ? NULL : (PyObject*)self;
  Py_XINCREF(owner);
  if (versioned) {
    e->m.version.major = DLPACK_MAJOR_VERSION;
    e->m.version.minor = DLPACK_MINOR_VERSION;
    e->m.manager_ctx = owner;
    e->m.deleter = dl_deleter_versioned;
    e->m.flags = do_copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  } else {
    e->legacy.manager_ctx = owner;
    e->legacy.deleter = dl_deleter_legacy;
  }
  PyObject* capsule =
      versioned ? PyCapsule_New(&e->m, "dltensor_versioned", dl_capsule_destructor)
                : PyCapsule_New(&e->legacy, "dltensor", dl_capsule_destructor);
  if (!capsule) {
    Py_XDECREF(owner);
    PyMem_RawFree(e);
    return NULL;
  }
  return capsule;
}

static PyObject* Buffer_dlpack_device(BufferObject* self, PyObject* noargs) {
  (void)noargs;
  if (!buffer_ready(self)) return NULL;
  return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

/* copy_from(obj): copies a buffer-protocol object of exactly nbytes bytes
 * into the device buffer (GIL released around the copy). */
static PyObject* Buffer_copy_from(BufferObject* self, PyObject* obj) {
  if (!buffer_ready(self)) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) != 0) return NULL;
  if ((uint64_t)view.len != self->size) {
    Py_ssize_t len = view.len;
    PyBuffer_Release(&view);
    return raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT,
                            len < 0 ? "copy_from: bad source size"
                                    : "copy_from: source size differs from the buffer's size");
  }
  void* dst = self->host;
  Py_BEGIN_ALLOW_THREADS
  memcpy(dst, view.buf, (size_t)view.len);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  Py_RETURN_NONE;
}

/* copy_to(obj): copies the buffer into a writable C-contiguous object of the
 * same byte size (GIL released around the copy). */
static PyObject* Buffer_copy_to(BufferObject* self, PyObject* obj) {
  if (!buffer_ready(self)) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) return NULL;
  if ((uint64_t)view.len != self->size) {
    PyBuffer_Release(&view);
    return raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT,
                            "copy_to: destination size differs from the buffer's size");
  }
  const void* src = self->host;
  Py_BEGIN_ALLOW_THREADS
  memcpy(view.buf, src, (size_t)view.len);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  Py_RETURN_NONE;
}

static PyObject* Buffer_get_nbytes(BufferObject* self, void* c) {
  (void)c;
  return PyLong_FromUnsignedLongLong(self->size);
}
static PyObject* Buffer_get_shape(BufferObject* self, void* c) {
  (void)c;
  return shape_tuple((uint32_t)self->ndim, self->shape);
}
static PyObject* Buffer_get_dtype(BufferObject* self, void* c) {
  (void)c;
  return PyLong_FromLong((long)self->dtype);
}
static PyObject* Buffer_get_device(BufferObject* self, void* c) {
  (void)c;
  if (!self->device_name) Py_RETURN_NONE;
  Py_INCREF(self->device_name);
  return self->device_name;
}
static PyObject* Buffer_get_data_ptr(BufferObject* self, void* c) {
  (void)c;
  return PyLong_FromVoidPtr(self->host);
}
static PyObject* Buffer_get_exports(BufferObject* self, void* c) {
  (void)c;
  return PyLong_FromSsize_t(self->exports);
}

static PyGetSetDef Buffer_getset[] = {
    {"nbytes", (getter)Buffer_get_nbytes, NULL, "Size in bytes.", NULL},
    {"shape", (getter)Buffer_get_shape, NULL, "Shape as a tuple of ints.", NULL},
    {"_dtype_code", (getter)Buffer_get_dtype, NULL, "Axle element type code.", NULL},
    {"device", (getter)Buffer_get_device, NULL, "Name of the device holding the memory.", NULL},
    {"data_ptr", (getter)Buffer_get_data_ptr, NULL, "Address of the host mapping.", NULL},
    {"_exports", (getter)Buffer_get_exports, NULL, "Live buffer-protocol exports.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef Buffer_methods[] = {
    {"__dlpack__", FN(Buffer_dlpack), METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n"
     "Exports the host mapping as a DLPack capsule (kDLCPU)."},
    {"__dlpack_device__", FN(Buffer_dlpack_device), METH_NOARGS,
     "Returns (device_type, device_id): (1, 0), kDLCPU, for host-mapped memory."},
    {"copy_from", FN(Buffer_copy_from), METH_O,
     "copy_from(obj): copy a C-contiguous buffer of the same byte size into this buffer."},
    {"copy_to", FN(Buffer_copy_to), METH_O,
     "copy_to(obj): copy this buffer into a writable C-contiguous buffer of the same byte size."},
    {NULL, NULL, 0, NULL}};

static PyBufferProcs Buffer_as_buffer = {
    .bf_getbuffer = (getbufferproc)Buffer_getbuffer,
    .bf_releasebuffer = (releasebufferproc)Buffer_releasebuffer,
};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._axle.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Buffer(shape, dtype_code, device): device memory mapped into the host.",
    .tp_methods = Buffer_methods,
    .tp_getset = Buffer_getset,
    .tp_init = (initproc)Buffer_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Session                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  axle_session_t* session;
  uint32_t n_in, n_out;
  char** in_names;           /* owned copies */
  axle_dtype_t* in_dtypes;
  void** last_in_ptrs;       /* debug: what the last run bound, by input index */
  Py_ssize_t active;         /* runs in flight (sync and async) */
  int closed;
} SessionObject;

static void session_free_tables(SessionObject* self) {
  if (self->in_names) {
    for (uint32_t i = 0; i < self->n_in; ++i) free(self->in_names[i]);
    free(self->in_names);
  }
  free(self->in_dtypes);
  free(self->last_in_ptrs);
  self->in_names = NULL;
  self->in_dtypes = NULL;
  self->last_in_ptrs = NULL;
}

static void session_release_now(SessionObject* self) {
  axle_session_t* s = self->session;
  self->session = NULL;
  if (s) {
    Py_BEGIN_ALLOW_THREADS
    axle_session_release(s);
    Py_END_ALLOW_THREADS
  }
}

static void session_end_run(SessionObject* self) {
  if (--self->active == 0 && self->closed) session_release_now(self);
}

static int session_usable(SessionObject* self) {
  if (!self->session) {
    raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT,
                     self->closed ? "the session is closed" : "the session is not initialised");
    return 0;
  }
  if (self->closed) {
    raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT, "the session is closed");
    return 0;
  }
  return 1;
}

/* One input given to a run: the Python object, the Py_buffer read in place
 * and the tensor wrapping it. */
typedef struct {
  PyObject* key;       /* strong */
  PyObject* keep;      /* strong: converted array or Buffer object, or NULL */
  axle_tensor_t* tensor;
  Py_buffer view;
  int has_view;
  int index;           /* session input index, -1 when the name is unknown */
} feed_t;

static void feeds_release(feed_t* f, Py_ssize_t n) {
  /* Tensors first (they point into the buffers), then the buffers. */
  for (Py_ssize_t i = 0; i < n; ++i) {
    axle_tensor_release(f[i].tensor);
    f[i].tensor = NULL;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (f[i].has_view) PyBuffer_Release(&f[i].view);
    f[i].has_view = 0;
    Py_CLEAR(f[i].keep);
    Py_CLEAR(f[i].key);
  }
}

/* Wraps a Py_buffer already held in f->view. */
static int wrap_view(feed_t* f, axle_dtype_t dt) {
  int64_t shape[AXLE_MAX_RANK];
  for (int d = 0; d < f->view.ndim; ++d) shape[d] = (int64_t)f->view.shape[d];
  axle_status_t st = axle_tensor_wrap(dt, (uint32_t)f->view.ndim, shape, f->view.buf,
                                      (size_t)f->view.len, NULL, NULL, &f->tensor);
  if (st != AXLE_OK) {
    raise_status(st);
    return -1;
  }
  return 0;
}

/* Tries to read obj in place: 1 done, 0 needs conversion, -1 error. */
static int try_view(feed_t* f, PyObject* obj, axle_dtype_t want) {
  if (!PyObject_CheckBuffer(obj)) return 0;
  if (PyObject_GetBuffer(obj, &f->view, PyBUF_ND | PyBUF_FORMAT) != 0) {
    PyErr_Clear(); /* not C-contiguous (or not exportable this way) */
    return 0;
  }
  axle_dtype_t dt = dtype_from_format(f->view.format, f->view.itemsize);
  if (want == AXLE_DTYPE_BF16 && dt == AXLE_DTYPE_U16) dt = AXLE_DTYPE_BF16;
  if (dt == AXLE_DTYPE_UNDEFINED || (want != AXLE_DTYPE_UNDEFINED && dt != want) ||
      f->view.ndim > AXLE_MAX_RANK || (f->view.ndim > 0 && !f->view.shape)) {
    PyBuffer_Release(&f->view);
    return 0;
  }
  f->has_view = 1;
  return wrap_view(f, dt) == 0 ? 1 : -1;
}

static int bind_feed(SessionObject* self, PyObject* key, PyObject* value, feed_t* f) {
  memset(f, 0, sizeof *f);
  f->index = -1;
  Py_INCREF(key);
  f->key = key;
  if (!PyUnicode_Check(key)) {
    PyErr_Format(PyExc_TypeError, "input names must be str, not %.100s", Py_TYPE(key)->tp_name);
    return -1;
  }
  const char* name = PyUnicode_AsUTF8(key);
  if (!name) return -1;
  for (uint32_t i = 0; i < self->n_in; ++i)
    if (strcmp(self->in_names[i], name) == 0) {
      f->index = (int)i;
      break;
    }
  axle_dtype_t want = f->index >= 0 ? self->in_dtypes[f->index] : AXLE_DTYPE_UNDEFINED;

  if (PyObject_TypeCheck(value, &BufferType)) {
    BufferObject* b = (BufferObject*)value;
    if (!buffer_ready(b)) return -1;
    axle_status_t st = axle_tensor_create_on_buffer(b->buffer, 0, b->dtype, (uint32_t)b->ndim,
                                                    b->shape, &f->tensor);
    if (st != AXLE_OK) {
      raise_status(st);
      return -1;
    }
    Py_INCREF(value);
    f->keep = value;
    return 0;
  }
  int r = try_view(f, value, want);
  if (r != 0) return r < 0 ? -1 : 0;
  if (!g_converter) {
    PyErr_SetString(PyExc_TypeError, "axle: inputs must be C-contiguous buffers of the right type");
    return -1;
  }
  PyObject* arr = PyObject_CallFunction(g_converter, "OOi", key, value, (int)want);
  if (!arr) return -1;
  f->keep = arr;
  r = try_view(f, arr, want);
  if (r == 0)
    PyErr_Format(PyExc_TypeError, "axle: input '%s' could not be converted to a C-contiguous "
                 "array of an Axle element type", name);
  return r > 0 ? 0 : -1;
}

typedef struct {
  feed_t stack[8];
  feed_t* feeds;
  Py_ssize_t count;
  const char* names_stack[8];
  const char** names;
  axle_tensor_t* tensors_stack[8];
  axle_tensor_t** tensors;
} bound_inputs_t;

static void bound_free(bound_inputs_t* b) {
  feeds_release(b->feeds, b->count);
  if (b->feeds != b->stack) PyMem_Free(b->feeds);
  if (b->names != b->names_stack) PyMem_Free((void*)b->names);
  if (b->tensors != b->tensors_stack) PyMem_Free(b->tensors);
  b->feeds = NULL;
  b->names = NULL;
  b->tensors = NULL;
  b->count = 0;
}

static int bind_inputs(SessionObject* self, PyObject* feeds_obj, bound_inputs_t* b) {
  b->feeds = b->stack;
  b->names = b->names_stack;
  b->tensors = b->tensors_stack;
  b->count = 0;
  PyObject* dict = feeds_obj;
  if (feeds_obj == Py_None) {
    dict = NULL;
  } else if (!PyDict_Check(feeds_obj)) {
    dict = PyDict_New();
    if (!dict) return -1;
    if (PyDict_Merge(dict, feeds_obj, 1) != 0) {
      Py_DECREF(dict);
      PyErr_Format(PyExc_TypeError, "inputs must be a mapping of name to array, not %.100s",
                   Py_TYPE(feeds_obj)->tp_name);
      return -1;
    }
  } else {
    Py_INCREF(dict);
  }
  Py_ssize_t n = dict ? PyDict_GET_SIZE(dict) : 0;
  if (n > 8) {
    b->feeds = (feed_t*)PyMem_Calloc((size_t)n, sizeof(feed_t));
    b->names = (const char**)PyMem_Calloc((size_t)n, sizeof(char*));
    b->tensors = (axle_tensor_t**)PyMem_Calloc((size_t)n, sizeof(axle_tensor_t*));
    if (!b->feeds || !b->names || !b->tensors) {
      Py_XDECREF(dict);
      bound_free(b);
      PyErr_NoMemory();
      return -1;
    }
  }
  Py_ssize_t pos = 0, i = 0;
  PyObject *key, *value;
  int rc = 0;
  while (dict && i < n && PyDict_Next(dict, &pos, &key, &value)) {
    b->count = i + 1;
    if (bind_feed(self, key, value, &b->feeds[i]) != 0) {
      rc = -1;
      break;
    }
    b->names[i] = PyUnicode_AsUTF8(b->feeds[i].key);
    b->tensors[i] = b->feeds[i].tensor;
    ++i;
  }
  Py_XDECREF(dict);
  if (rc != 0) bound_free(b);
  return rc;
}

static void record_input_pointers(SessionObject* self, bound_inputs_t* b) {
  for (Py_ssize_t i = 0; i < b->count; ++i)
    if (b->feeds[i].index >= 0)
      self->last_in_ptrs[b->feeds[i].index] = axle_tensor_data(b->feeds[i].tensor);
}

/* Output names: NULL (all) or a sequence of str. */
typedef struct {
  PyObject* fast;
  const char* stack[8];
  const char** names;
  uint32_t count;
} out_names_t;

static void out_names_free(out_names_t* o) {
  Py_CLEAR(o->fast);
  if (o->names && o->names != o->stack) PyMem_Free((void*)o->names);
  o->names = NULL;
}

static int parse_out_names(SessionObject* self, PyObject* obj, out_names_t* o) {
  o->fast = NULL;
  o->names = NULL;
  if (obj == Py_None) {
    o->count = self->n_out;
    return 0;
  }
  if (PyUnicode_Check(obj)) {
    PyErr_SetString(PyExc_TypeError, "output_names must be None or a list of str, not a str");
    return -1;
  }
  o->fast = PySequence_Fast(obj, "output_names must be None or a list of str");
  if (!o->fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o->fast);
  o->names = n > 8 ? (const char**)PyMem_Calloc((size_t)n, sizeof(char*)) : o->stack;
  if (!o->names) {
    out_names_free(o);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(o->fast, i);
    if (!PyUnicode_Check(item) || !(o->names[i] = PyUnicode_AsUTF8(item))) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "output names must be str");
      out_names_free(o);
      return -1;
    }
  }
  o->count = (uint32_t)n;
  return 0;
}

static int parse_timeout(PyObject* obj, axle_run_options_t* ro) {
  ro->struct_size = sizeof *ro;
  ro->timeout_ms = 0;
  if (!obj || obj == Py_None) return 0;
  double s = PyFloat_AsDouble(obj);
  if (s == -1.0 && PyErr_Occurred()) return -1;
  if (!(s > 0)) {
    raise_status_msg(AXLE_STATUS_INVALID_ARGUMENT, "timeout must be a positive number of seconds");
    return -1;
  }
  double ms = s * 1000.0;
  ro->timeout_ms = ms >= 4294967295.0 ? 4294967295u : (uint32_t)(ms < 1 ? 1 : ms + 0.5);
  return 0;
}

/* run(output_names, feeds, timeout=None) -> list[numpy.ndarray] */
static int parse_run_args(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                          const char* fname, PyObject** out_names, PyObject** feeds,
                          PyObject** timeout) {
  *out_names = Py_None;
  *feeds = Py_None;
  *timeout = NULL;
  if (nargs > 3) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 3 arguments (%zd given)", fname, nargs);
    return -1;
  }
  if (nargs > 0) *out_names = args[0];
  if (nargs > 1) *feeds = args[1];
  if (nargs > 2) *timeout = args[2];
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nk; ++i) {
    PyObject* k = PyTuple_GET_ITEM(kwnames, i);
    PyObject* v = args[nargs + i];
    if (PyUnicode_CompareWithASCIIString(k, "timeout") == 0 && nargs < 3)
      *timeout = v;
    else if (PyUnicode_CompareWithASCIIString(k, "output_names") == 0 && nargs < 1)
      *out_names = v;
    else if ((PyUnicode_CompareWithASCIIString(k, "input_feed") == 0 ||
              PyUnicode_CompareWithASCIIString(k, "feeds") == 0) && nargs < 2)
      *feeds = v;
    else {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, k);
      return -1;
    }
  }
  return 0;
}

static PyObject* Session_run(SessionObject* self, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  PyObject *names_obj, *feeds_obj, *timeout_obj;
  if (parse_run_args(args, nargs, kwnames, "run", &names_obj, &feeds_obj, &timeout_obj) != 0)
    return NULL;
  if (!session_usable(self)) return NULL;
  axle_run_options_t ro;
  if (parse_timeout(timeout_obj, &ro) != 0) return NULL;
  out_names_t on;
  if (parse_out_names(self, names_obj, &on) != 0) return NULL;
  bound_inputs_t b;
  if (bind_inputs(self, feeds_obj, &b) != 0) {
    out_names_free(&on);
    return NULL;
  }
  axle_tensor_t* outs_stack[8] = {NULL};
  axle_tensor_t** outs = outs_stack;
  if (on.count > 8 && !(outs = (axle_tensor_t**)PyMem_Calloc(on.count, sizeof(void*)))) {
    bound_free(&b);
    out_names_free(&on);
    return PyErr_NoMemory();
  }
  record_input_pointers(self, &b);
  axle_session_t* s = self->session;
  axle_status_t st;
  char msg[1024];
  self->active++;
  Py_BEGIN_ALLOW_THREADS
  st = axle_session_run(s, ro.timeout_ms ? &ro : NULL, b.names, b.tensors, (uint32_t)b.count,
                        on.names, outs, on.count);
  if (st != AXLE_OK) copy_message(msg, sizeof msg);
  Py_END_ALLOW_THREADS
  bound_free(&b);
  out_names_free(&on);
  session_end_run(self);
  PyObject* result = NULL;
  if (st != AXLE_OK) {
    raise_status_msg(st, msg);
  } else if ((result = PyList_New(on.count))) {
    for (uint32_t i = 0; i < on.count; ++i) {
      axle_tensor_t* t = outs[i];
      outs[i] = NULL;
      PyObject* arr = array_from_tensor(t);
      if (!arr) {
        Py_CLEAR(result);
        break;
      }
      PyList_SET_ITEM(result, i, arr);
    }
  }
  for (uint32_t i = 0; i < on.count; ++i) axle_tensor_release(outs[i]);
  if (outs != outs_stack) PyMem_Free(outs);
  return result;
}

/* ------------------------------------------------------------------------ */
/* AsyncRun                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  SessionObject* session;  /* strong: keeps the axle session alive */
  axle_event_t* event;
  bound_inputs_t inputs;   /* held until completion */
  uint32_t n_out;
  int finished;            /* completion observed, inputs released */
  axle_status_t status;
  PyObject* message;       /* str when status != OK */
  PyObject* results;       /* list when status == OK */
} AsyncRunObject;

/* Called once completion is known (event done). */
static int asyncrun_finish(AsyncRunObject* self, int event_alive) {
  if (self->finished) return 0;
  self->finished = 1;
  int rc = 0;
  if (event_alive) {
    self->status = axle_event_query(self->event);
    if (self->status != AXLE_OK) {
      self->message = PyUnicode_DecodeUTF8(axle_status_message(),
                                           (Py_ssize_t)strlen(axle_status_message()), "replace");
      if (!self->message) rc = -1;
    } else if ((self->results = PyList_New(self->n_out))) {
      for (uint32_t i = 0; i < self->n_out; ++i) {
        axle_tensor_t* t = NULL;
        axle_status_t st = axle_event_output(self->event, i, &t);
        PyObject* arr = st == AXLE_OK ? array_from_tensor(t) : raise_status(st);
        if (!arr) {
          Py_CLEAR(self->results);
          rc = -1;
          break;
        }
        PyList_SET_ITEM(self->results, i, arr);
      }
    } else {
      rc = -1;
    }
  } else {
    self->status = AXLE_STATUS_CANCELLED;
  }
  bound_free(&self->inputs);
  session_end_run(self->session);
  return rc;
}

static void AsyncRun_dealloc(AsyncRunObject* self) {
  if (self->event) {
    axle_event_t* e = self->event;
    self->event = NULL;
    int was_finished = self->finished;
    /* Cancels a pending run and waits for it; the worker never needs the GIL. */
    Py_BEGIN_ALLOW_THREADS
    axle_event_release(e);
    Py_END_ALLOW_THREADS
    if (!was_finished) asyncrun_finish(self, 0);
  }
  Py_XDECREF(self->message);
  Py_XDECREF(self->results);
  Py_XDECREF(self->session);
  PyObject_Free(self);
}

static PyObject* AsyncRun_done(AsyncRunObject* self, PyObject* noargs) {
  (void)noargs;
  if (!self->finished) {
    if (axle_event_query(self->event) == AXLE_STATUS_PENDING) Py_RETURN_FALSE;
    if (asyncrun_finish(self, 1) != 0) return NULL;
  }
  Py_RETURN_TRUE;
}

/* Waits up to timeout seconds (None = forever) with the GIL released, in
 * slices so that signals (Ctrl-C) are handled. Returns 1 done, 0 not yet,
 * -1 error (signal). */
static int asyncrun_wait(AsyncRunObject* self, PyObject* timeout_obj) {
  if (self->finished) return 1;
  double timeout = -1;
  if (timeout_obj && timeout_obj != Py_None) {
    timeout = PyFloat_AsDouble(timeout_obj);
    if (timeout == -1.0 && PyErr_Occurred()) return -1;
    if (timeout < 0) timeout = 0;
  }
  axle_event_t* e = self->event;
  double waited = 0;
  for (;;) {
    int64_t slice = 100;
    if (timeout >= 0) {
      double left = (timeout - waited) * 1000.0;
      if (left < slice) slice = left > 0 ? (int64_t)(left + 0.999) : 0;
    }
    axle_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = axle_event_wait(e, slice);
    if (st == AXLE_STATUS_TIMEOUT) st = axle_event_query(e);
    Py_END_ALLOW_THREADS
    if (st != AXLE_STATUS_PENDING) break;
    waited += (double)slice / 1000.0;
    if (PyErr_CheckSignals() != 0) return -1;
    if (timeout >= 0 && waited >= timeout) return 0;
  }
  return asyncrun_finish(self, 1) == 0 ? 1 : -1;
}

static PyObject* AsyncRun_wait(AsyncRunObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"timeout", NULL};
  PyObject* timeout = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:wait", kwlist, &timeout)) return NULL;
  int r = asyncrun_wait(self, timeout);
  if (r < 0) return NULL;
  return PyBool_FromLong(r);
}

static PyObject* AsyncRun_result(AsyncRunObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"timeout", NULL};
  PyObject* timeout = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:result", kwlist, &timeout)) return NULL;
  int r = asyncrun_wait(self, timeout);
  if (r < 0) return NULL;
  if (r == 0)
    return raise_status_msg(AXLE_STATUS_TIMEOUT, "the run is still in progress after the timeout");
  if (self->status != AXLE_OK)
    return raise_status_msg(self->status, self->message ? PyUnicode_AsUTF8(self->message) : "");
  if (!self->results) return raise_status_msg(AXLE_STATUS_INTERNAL, "outputs unavailable");
  Py_INCREF(self->results);
  return self->results;
}

static PyObject* AsyncRun_cancel(AsyncRunObject* self, PyObject* noargs) {
  (void)noargs;
  if (self->finished || axle_event_query(self->event) != AXLE_STATUS_PENDING) Py_RETURN_FALSE;
  axle_status_t st = axle_event_cancel(self->event);
  if (st != AXLE_OK) return raise_status(st);
  Py_RETURN_TRUE;
}

static PyObject* AsyncRun_fileno(AsyncRunObject* self, PyObject* noargs) {
  (void)noargs;
  int fd = -1;
  axle_status_t st = axle_event_fd(self->event, &fd);
  if (st != AXLE_OK) return raise_status(st);
  return PyLong_FromLong(fd);
}

static PyMethodDef AsyncRun_methods[] = {
    {"done", FN(AsyncRun_done), METH_NOARGS, "True once the run has completed (non-blocking)."},
    {"wait", FN(AsyncRun_wait), METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool: wait (GIL released) until completion or timeout seconds."},
    {"result", FN(AsyncRun_result), METH_VARARGS | METH_KEYWORDS,
     "result(timeout=None) -> list of arrays; raises the run's error, or axle.Timeout."},
    {"cancel", FN(AsyncRun_cancel), METH_NOARGS,
     "Asks a pending run to stop; True if it was still pending."},
    {"fileno", FN(AsyncRun_fileno), METH_NOARGS,
     "File descriptor that becomes readable when the run completes (owned by the run)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject AsyncRunType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._axle.AsyncRun",
    .tp_basicsize = sizeof(AsyncRunObject),
    .tp_dealloc = (destructor)AsyncRun_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An asynchronous run (axle_event_t); inputs are held until it completes.",
    .tp_methods = AsyncRun_methods,
};

static PyObject* Session_submit(SessionObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  PyObject *names_obj, *feeds_obj, *timeout_obj;
  if (parse_run_args(args, nargs, kwnames, "run_async", &names_obj, &feeds_obj, &timeout_obj) != 0)
    return NULL;
  if (!session_usable(self)) return NULL;
  axle_run_options_t ro;
  if (parse_timeout(timeout_obj, &ro) != 0) return NULL;
  AsyncRunObject* run = PyObject_New(AsyncRunObject, &AsyncRunType);
  if (!run) return NULL;
  run->session = NULL;
  run->event = NULL;
  memset(&run->inputs, 0, sizeof run->inputs);
  run->finished = 1; /* nothing to finish until submitted */
  run->status = AXLE_OK;
  run->message = NULL;
  run->results = NULL;
  out_names_t on;
  if (parse_out_names(self, names_obj, &on) != 0) {
    Py_DECREF(run);
    return NULL;
  }
  if (bind_inputs(self, feeds_obj, &run->inputs) != 0) {
    out_names_free(&on);
    Py_DECREF(run);
    return NULL;
  }
  bound_inputs_t* b = &run->inputs; /* inline arrays live in the run object */
  record_input_pointers(self, b);
  axle_status_t st = axle_session_submit(self->session, ro.timeout_ms ? &ro : NULL, b->names,
                                         b->tensors, (uint32_t)b->count, on.names, on.count,
                                         &run->event);
  out_names_free(&on);
  if (st != AXLE_OK) {
    raise_status(st);
    bound_free(b);
    Py_DECREF(run);
    return NULL;
  }
  run->n_out = on.count;
  Py_INCREF(self);
  run->session = self;
  self->active++;
  run->finished = 0;
  return (PyObject*)run;
}

/* ------------------------------------------------------------------------ */
/* Session construction and queries                                          */
/* ------------------------------------------------------------------------ */

static int Session_init(SessionObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"model", "devices", "flags", "threads", "constants", "input_shapes",
                           NULL};
  PyObject *model_obj, *devices_obj = Py_None, *consts_obj = Py_None, *shapes_obj = Py_None;
  unsigned int flags = 0, threads = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OIIOO:Session", kwlist, &model_obj,
                                   &devices_obj, &flags, &threads, &consts_obj, &shapes_obj))
    return -1;
  if (self->session || self->closed) {
    PyErr_SetString(PyExc_RuntimeError, "Session is already initialised");
    return -1;
  }
  axle_runtime_t* rt = get_runtime();
  if (!rt) return -1;

  int rc = -1;
  axle_model_t* model = NULL;
  axle_session_t* session = NULL;
  PyObject* devs_fast = NULL;
  const char** devs = NULL;
  Py_ssize_t ndev = 0;
  Py_ssize_t nconst = 0;
  feed_t* consts = NULL;
  const char** const_names = NULL;
  axle_tensor_t** const_tensors = NULL;
  axle_tensor_info_t* shapes = NULL;
  Py_ssize_t nshapes = 0;
  PyObject* shape_keys = NULL;
  axle_status_t st;
  char msg[1024] = "";

  /* Model: a path (str / os.PathLike) or the model's bytes. */
  if (PyUnicode_Check(model_obj) || PyObject_HasAttrString(model_obj, "__fspath__")) {
    PyObject* path = NULL;
    if (!PyUnicode_FSConverter(model_obj, &path)) goto done;
    const char* p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    st = axle_model_load_file(p, &model);
    if (st != AXLE_OK) copy_message(msg, sizeof msg);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (st != AXLE_OK) {
      raise_status_cls(st == AXLE_STATUS_NOT_FOUND ? g_file_not_found : g_error_classes[st], st,
                       msg);
      goto done;
    }
  } else if (PyObject_CheckBuffer(model_obj)) {
    Py_buffer view;
    if (PyObject_GetBuffer(model_obj, &view, PyBUF_SIMPLE) != 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    st = axle_model_load_memory(view.buf, (size_t)view.len, &model);
    if (st != AXLE_OK) copy_message(msg, sizeof msg);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (st != AXLE_OK) {
      raise_status_msg(st, msg);
      goto done;
    }
  } else {
    PyErr_Format(PyExc_TypeError, "model must be a path or bytes, not %.100s",
                 Py_TYPE(model_obj)->tp_name);
    goto done;
  }

  if (devices_obj != Py_None) {
    if (PyUnicode_Check(devices_obj)) {
      PyErr_SetString(PyExc_TypeError, "devices must be a list of device names, not a str");
      goto done;
    }
    devs_fast = PySequence_Fast(devices_obj, "devices must be a list of device names");
    if (!devs_fast) goto done;
    ndev = PySequence_Fast_GET_SIZE(devs_fast);
    devs = (const char**)PyMem_Calloc((size_t)ndev + 1, sizeof(char*));
    if (!devs) {
      PyErr_NoMemory();
      goto done;
    }
    for (Py_ssize_t i = 0; i < ndev; ++i) {
      PyObject* d = PySequence_Fast_GET_ITEM(devs_fast, i);
      if (!PyUnicode_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "device names must be str");
        goto done;
      }
      if (!(devs[i] = PyUnicode_AsUTF8(d))) goto done;
    }
  }

  /* Constant inputs: {name: array}, dtype from the model's input. */
  if (consts_obj != Py_None) {
    if (!PyDict_Check(consts_obj)) {
      PyErr_SetString(PyExc_TypeError, "constants must be a dict of name to array");
      goto done;
    }
    nconst = PyDict_GET_SIZE(consts_obj);
    consts = (feed_t*)PyMem_Calloc((size_t)nconst + 1, sizeof(feed_t));
    const_names = (const char**)PyMem_Calloc((size_t)nconst + 1, sizeof(char*));
    const_tensors = (axle_tensor_t**)PyMem_Calloc((size_t)nconst + 1, sizeof(void*));
    if (!consts || !const_names || !const_tensors) {
      PyErr_NoMemory();
      goto done;
    }
    /* A temporary table of the model's inputs for the dtype lookup. */
    SessionObject tmp = {0};
    uint32_t nin = axle_model_input_count(model);
    tmp.n_in = nin;
    tmp.in_names = (char**)calloc(nin + 1, sizeof(char*));
    tmp.in_dtypes = (axle_dtype_t*)calloc(nin + 1, sizeof(axle_dtype_t));
    if (!tmp.in_names || !tmp.in_dtypes) {
      free(tmp.in_names);
      free(tmp.in_dtypes);
      PyErr_NoMemory();
      goto done;
    }
    for (uint32_t i = 0; i < nin; ++i) {
      axle_tensor_info_t info = {.struct_size = sizeof info};
      if (axle_model_input_info(model, i, &info) == AXLE_OK) {
        tmp.in_names[i] = (char*)info.name;
        tmp.in_dtypes[i] = info.dtype;
      } else {
        tmp.in_names[i] = (char*)"";
      }
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    int bad = 0;
    while (PyDict_Next(consts_obj, &pos, &k, &v)) {
      if (bind_feed(&tmp, k, v, &consts[i]) != 0) {
        ++i;
        bad = 1;
        break;
      }
      const_names[i] = PyUnicode_AsUTF8(consts[i].key);
      const_tensors[i] = consts[i].tensor;
      ++i;
    }
    nconst = i;
    free(tmp.in_names);
    free(tmp.in_dtypes);
    if (bad) goto done;
  }

  /* Concrete shapes for symbolic inputs: {name: shape}. */
  if (shapes_obj != Py_None) {
    if (!PyDict_Check(shapes_obj)) {
      PyErr_SetString(PyExc_TypeError, "input_shapes must be a dict of name to shape");
      goto done;
    }
    nshapes = PyDict_GET_SIZE(shapes_obj);
    shapes = (axle_tensor_info_t*)PyMem_Calloc((size_t)nshapes + 1, sizeof *shapes);
    shape_keys = PyList_New(0);
    if (!shapes || !shape_keys) {
      PyErr_NoMemory();
      goto done;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(shapes_obj, &pos, &k, &v)) {
      if (!PyUnicode_Check(k)) {
        PyErr_SetString(PyExc_TypeError, "input_shapes keys must be str");
        goto done;
      }
      if (PyList_Append(shape_keys, k) != 0) goto done;
      shapes[i].struct_size = sizeof shapes[i];
      shapes[i].name = PyUnicode_AsUTF8(k);
      int rank = parse_shape(v, shapes[i].shape, "input_shapes");
      if (rank < 0 || !shapes[i].name) goto done;
      shapes[i].rank = (uint32_t)rank;
      ++i;
    }
  }

  {
    axle_session_options_t opts = {.struct_size = sizeof opts};
    opts.flags = flags;
    opts.devices = devs;
    opts.device_count = (uint32_t)ndev;
    opts.threads = threads;
    opts.constant_input_count = (uint32_t)nconst;
    opts.constant_input_names = const_names;
    opts.constant_inputs = const_tensors;
    opts.input_shape_count = (uint32_t)nshapes;
    opts.input_shapes = shapes;
    Py_BEGIN_ALLOW_THREADS
    st = axle_session_create(rt, model, &opts, &session);
    if (st != AXLE_OK) copy_message(msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (st != AXLE_OK) {
      raise_status_msg(st, msg);
      goto done;
    }
  }

  self->n_in = axle_session_input_count(session);
  self->n_out = axle_session_output_count(session);
  self->in_names = (char**)calloc(self->n_in + 1, sizeof(char*));
  self->in_dtypes = (axle_dtype_t*)calloc(self->n_in + 1, sizeof(axle_dtype_t));
  self->last_in_ptrs = (void**)calloc(self->n_in + 1, sizeof(void*));
  if (!self->in_names || !self->in_dtypes || !self->last_in_ptrs) {
    PyErr_NoMemory();
    goto done;
  }
  for (uint32_t i = 0; i < self->n_in; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    if ((st = axle_session_input_info(session, i, &info)) != AXLE_OK) {
      raise_status(st);
      goto done;
    }
    if (!(self->in_names[i] = strdup(info.name))) {
      PyErr_NoMemory();
      goto done;
    }
    self->in_dtypes[i] = info.dtype;
  }
  self->session = session;
  session = NULL;
  rc = 0;

done:
  if (rc != 0) session_free_tables(self);
  if (session) {
    Py_BEGIN_ALLOW_THREADS
    axle_session_release(session);
    Py_END_ALLOW_THREADS
  }
  axle_model_release(model); /* the session holds its own reference */
  if (consts) feeds_release(consts, nconst);
  PyMem_Free(consts);
  PyMem_Free((void*)const_names);
  PyMem_Free(const_tensors);
  PyMem_Free(shapes);
  Py_XDECREF(shape_keys);
  PyMem_Free((void*)devs);
  Py_XDECREF(devs_fast);
  return rc;
}

static void Session_dealloc(SessionObject* self) {
  /* Runs in flight hold a reference to this object, so none is pending. */
  session_release_now(self);
  session_free_tables(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* Session_close(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  if (self->closed) Py_RETURN_NONE;
  self->closed = 1;
  if (self->active == 0) session_release_now(self);
  /* else the last run in flight releases it */
  Py_RETURN_NONE;
}

static PyObject* Session_get_closed(SessionObject* self, void* c) {
  (void)c;
  return PyBool_FromLong(self->closed);
}

static PyObject* info_tuple(const axle_tensor_info_t* info) {
  PyObject* shape = shape_tuple(info->rank, info->shape);
  if (!shape) return NULL;
  PyObject* quant;
  if (info->quant.count) {
    PyObject* scales = PyTuple_New(info->quant.count);
    PyObject* zps = PyTuple_New(info->quant.count);
    if (!scales || !zps) {
      Py_XDECREF(scales);
      Py_XDECREF(zps);
      Py_DECREF(shape);
      return NULL;
    }
    for (uint32_t i = 0; i < info->quant.count; ++i) {
      PyTuple_SET_ITEM(scales, i, PyFloat_FromDouble(info->quant.scales[i]));
      PyTuple_SET_ITEM(zps, i, PyLong_FromLong(info->quant.zero_points[i]));
    }
    quant = Py_BuildValue("(NNi)", scales, zps, (int)info->quant.axis);
  } else {
    quant = Py_None;
    Py_INCREF(quant);
  }
  if (!quant) {
    Py_DECREF(shape);
    return NULL;
  }
  return Py_BuildValue("(siNN)", info->name, (int)info->dtype, shape, quant);
}

static PyObject* session_infos(SessionObject* self, int outputs) {
  if (!session_usable(self)) return NULL;
  uint32_t n = outputs ? self->n_out : self->n_in;
  PyObject* list = PyList_New(n);
  if (!list) return NULL;
  for (uint32_t i = 0; i < n; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    axle_status_t st = outputs ? axle_session_output_info(self->session, i, &info)
                               : axle_session_input_info(self->session, i, &info);
    PyObject* item = st == AXLE_OK ? info_tuple(&info) : raise_status(st);
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject* Session_input_infos(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  return session_infos(self, 0);
}

static PyObject* Session_output_infos(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  return session_infos(self, 1);
}

static PyObject* take_text(char* text) {
  PyObject* r = PyUnicode_DecodeUTF8(text ? text : "", text ? (Py_ssize_t)strlen(text) : 0,
                                     "replace");
  axle_free(text);
  return r;
}

static PyObject* Session_placement_report(SessionObject* self, PyObject* arg) {
  int format = (int)PyLong_AsLong(arg);
  if (format == -1 && PyErr_Occurred()) return NULL;
  if (!session_usable(self)) return NULL;
  char* text = NULL;
  axle_status_t st = axle_session_placement_report(self->session, format, &text);
  if (st != AXLE_OK) return raise_status(st);
  return take_text(text);
}

static PyObject* Session_trace_json(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  if (!session_usable(self)) return NULL;
  char* text = NULL;
  axle_status_t st = axle_session_trace_json(self->session, &text);
  if (st != AXLE_OK) return raise_status(st);
  return take_text(text);
}

static PyObject* Session_trace_write(SessionObject* self, PyObject* arg) {
  if (!session_usable(self)) return NULL;
  PyObject* path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  const char* p = PyBytes_AS_STRING(path);
  axle_session_t* s = self->session;
  axle_status_t st;
  char msg[1024];
  self->active++;
  Py_BEGIN_ALLOW_THREADS
  st = axle_session_trace_write(s, p);
  if (st != AXLE_OK) copy_message(msg, sizeof msg);
  Py_END_ALLOW_THREADS
  session_end_run(self);
  Py_DECREF(path);
  if (st != AXLE_OK) return raise_status_msg(st, msg);
  Py_RETURN_NONE;
}

static PyObject* Session_trace_clear(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  if (!session_usable(self)) return NULL;
  axle_session_trace_clear(self->session);
  Py_RETURN_NONE;
}

static PyObject* Session_stats(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  if (!session_usable(self)) return NULL;
  axle_session_stats_t stats = {.struct_size = sizeof stats};
  axle_status_t st = axle_session_stats(self->session, &stats);
  if (st != AXLE_OK) return raise_status(st);
  return Py_BuildValue("(KKII)", (unsigned long long)stats.planned_peak_bytes,
                       (unsigned long long)stats.unplanned_bytes, stats.partition_count,
                       stats.node_count);
}

static PyObject* Session_last_input_pointers(SessionObject* self, PyObject* noargs) {
  (void)noargs;
  PyObject* d = PyDict_New();
  if (!d || !self->in_names) return d;
  for (uint32_t i = 0; i < self->n_in; ++i) {
    if (!self->last_in_ptrs[i]) continue;
    PyObject* p = PyLong_FromVoidPtr(self->last_in_ptrs[i]);
    if (!p || PyDict_SetItemString(d, self->in_names[i], p) != 0) {
      Py_XDECREF(p);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(p);
  }
  return d;
}

static PyObject* Session_get_active(SessionObject* self, void* c) {
  (void)c;
  return PyLong_FromSsize_t(self->active);
}

static PyMethodDef Session_methods[] = {
    {"run", FN(Session_run), METH_FASTCALL | METH_KEYWORDS,
     "run(output_names, input_feed, timeout=None) -> list of numpy arrays\n\n"
     "Runs synchronously with the GIL released. output_names None means every\n"
     "output in model order. C-contiguous inputs of the input's dtype are read\n"
     "in place; others are converted. Outputs are numpy arrays viewing the\n"
     "Axle output tensors. timeout is in seconds."},
    {"_submit", FN(Session_submit), METH_FASTCALL | METH_KEYWORDS,
     "_submit(output_names, input_feed, timeout=None) -> AsyncRun"},
    {"close", FN(Session_close), METH_NOARGS,
     "Releases the session (deferred until runs in flight finish). Outputs stay valid."},
    {"_input_infos", FN(Session_input_infos), METH_NOARGS,
     "[(name, dtype_code, shape, quant)] of the session inputs."},
    {"_output_infos", FN(Session_output_infos), METH_NOARGS,
     "[(name, dtype_code, shape, quant)] of the session outputs."},
    {"_placement_report", FN(Session_placement_report), METH_O,
     "_placement_report(format) -> str (0 text, 1 JSON)."},
    {"_trace_json", FN(Session_trace_json), METH_NOARGS, "Chrome trace JSON text."},
    {"_trace_write", FN(Session_trace_write), METH_O, "Writes the Chrome trace JSON to a path."},
    {"clear_trace", FN(Session_trace_clear), METH_NOARGS, "Drops the recorded trace events."},
    {"_stats", FN(Session_stats), METH_NOARGS,
     "(planned_peak_bytes, unplanned_bytes, partition_count, node_count)"},
    {"_last_input_pointers", FN(Session_last_input_pointers), METH_NOARGS,
     "Debug: {input name: data pointer the last run bound (axle_tensor_data)}."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Session_getset[] = {
    {"closed", (getter)Session_get_closed, NULL, "True after close().", NULL},
    {"_active", (getter)Session_get_active, NULL, "Runs in flight (debug).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "axle._axle.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Session(model, devices=None, flags=0, threads=0, constants=None, input_shapes=None)\n"
              "Low-level session; use axle.Session.",
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
    .tp_init = (initproc)Session_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Module functions                                                          */
/* ------------------------------------------------------------------------ */

static PyObject* mod_devices(PyObject* m, PyObject* noargs) {
  (void)m;
  (void)noargs;
  axle_runtime_t* rt = get_runtime();
  if (!rt) return NULL;
  uint32_t n = axle_runtime_device_count(rt);
  PyObject* list = PyList_New(n);
  if (!list) return NULL;
  for (uint32_t i = 0; i < n; ++i) {
    axle_device_info_t d = {.struct_size = sizeof d};
    axle_status_t st = axle_runtime_device_info(rt, i, &d);
    PyObject* item =
        st != AXLE_OK ? raise_status(st)
                      : Py_BuildValue("(sssiiKK)", d.name, d.description ? d.description : "",
                                      d.plugin ? d.plugin : "", (int)d.kind, (int)d.emulated,
                                      (unsigned long long)d.memory_bytes,
                                      (unsigned long long)d.dtype_mask);
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject* mod_plugins(PyObject* m, PyObject* noargs) {
  (void)m;
  (void)noargs;
  axle_runtime_t* rt = get_runtime();
  if (!rt) return NULL;
  uint32_t n = axle_runtime_plugin_count(rt);
  PyObject* list = PyList_New(n);
  if (!list) return NULL;
  for (uint32_t i = 0; i < n; ++i) {
    axle_plugin_info_t p = {.struct_size = sizeof p};
    axle_status_t st = axle_runtime_plugin_info(rt, i, &p);
    PyObject* item = st != AXLE_OK
                         ? raise_status(st)
                         : Py_BuildValue("(sssIK)", p.name, p.description ? p.description : "",
                                         p.path ? p.path : "", p.abi_version,
                                         (unsigned long long)p.features);
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject* mod_diagnostics(PyObject* m, PyObject* noargs) {
  (void)m;
  (void)noargs;
  axle_runtime_t* rt = get_runtime();
  if (!rt) return NULL;
  uint32_t n = axle_runtime_diagnostic_count(rt);
  PyObject* list = PyList_New(n);
  if (!list) return NULL;
  for (uint32_t i = 0; i < n; ++i) {
    const char* d = axle_runtime_diagnostic(rt, i);
    PyObject* s = PyUnicode_DecodeUTF8(d ? d : "", d ? (Py_ssize_t)strlen(d) : 0, "replace");
    if (!s) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, s);
  }
  return list;
}

static PyObject* mod_load_plugin(PyObject* m, PyObject* arg) {
  (void)m;
  axle_runtime_t* rt = get_runtime();
  if (!rt) return NULL;
  PyObject* path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  axle_status_t st = axle_runtime_load_plugin(rt, PyBytes_AS_STRING(path));
  Py_DECREF(path);
  if (st != AXLE_OK) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject* mod_library_path(PyObject* m, PyObject* noargs) {
  (void)m;
  (void)noargs;
  Dl_info info;
  if (dladdr((void*)&axle_version_number, &info) && info.dli_fname)
    return PyUnicode_DecodeFSDefault(info.dli_fname);
  Py_RETURN_NONE;
}

static PyObject* mod_version(PyObject* m, PyObject* noargs) {
  (void)m;
  (void)noargs;
  return PyUnicode_FromString(axle_version_string());
}

/* _tensor_data_ptr(obj): the data pointer of a Tensor, an ndarray viewing
 * one (through .base / memoryview .obj), or a Buffer. */
static PyObject* mod_tensor_data_ptr(PyObject* m, PyObject* obj) {
  (void)m;
  Py_INCREF(obj);
  for (int depth = 0; depth < 16 && obj && obj != Py_None; ++depth) {
    if (PyObject_TypeCheck(obj, &TensorType)) {
      PyObject* r = PyLong_FromVoidPtr(axle_tensor_data(((TensorObject*)obj)->tensor));
      Py_DECREF(obj);
      return r;
    }
    if (PyObject_TypeCheck(obj, &BufferType)) {
      PyObject* r = PyLong_FromVoidPtr(((BufferObject*)obj)->host);
      Py_DECREF(obj);
      return r;
    }
    PyObject* next;
    if (PyMemoryView_Check(obj)) {
      next = PyMemoryView_GET_BUFFER(obj)->obj;
      Py_XINCREF(next);
    } else {
      next = PyObject_GetAttrString(obj, "base");
      if (!next) PyErr_Clear();
    }
    Py_DECREF(obj);
    obj = next;
  }
  Py_XDECREF(obj);
  PyErr_SetString(PyExc_TypeError, "not an Axle tensor (or an array viewing one)");
  return NULL;
}

static PyObject* mod_dtype_info(PyObject* m, PyObject* arg) {
  (void)m;
  long code = PyLong_AsLong(arg);
  if (code == -1 && PyErr_Occurred()) return NULL;
  const char* fmt = dtype_format((axle_dtype_t)code);
  return Py_BuildValue("(szn)", axle_dtype_name((axle_dtype_t)code), fmt,
                       (Py_ssize_t)axle_dtype_size((axle_dtype_t)code));
}

/* _raise_status(code, message): raises what a failure with that status
 * raises (tests the mapping of every status code). */
static PyObject* mod_raise_status(PyObject* m, PyObject* args) {
  (void)m;
  int code;
  const char* message;
  if (!PyArg_ParseTuple(args, "is:_raise_status", &code, &message)) return NULL;
  return raise_status_msg((axle_status_t)code, message);
}

/* _setup(error_base, {code: class}, file_not_found_class, asarray, converter) */
static PyObject* mod_setup(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *base, *table, *fnf, *asarray, *converter;
  if (!PyArg_ParseTuple(args, "OO!OOO:_setup", &base, &PyDict_Type, &table, &fnf, &asarray,
                        &converter))
    return NULL;
  Py_INCREF(base);
  Py_XSETREF(g_error_base, base);
  for (int i = 0; i < MAX_STATUS; ++i) {
    PyObject* key = PyLong_FromLong(i);
    if (!key) return NULL;
    PyObject* cls = PyDict_GetItemWithError(table, key);
    Py_DECREF(key);
    if (!cls && PyErr_Occurred()) return NULL;
    Py_XINCREF(cls);
    Py_XSETREF(g_error_classes[i], cls);
  }
  Py_INCREF(fnf);
  Py_XSETREF(g_file_not_found, fnf);
  Py_INCREF(asarray);
  Py_XSETREF(g_asarray, asarray);
  Py_INCREF(converter);
  Py_XSETREF(g_converter, converter);
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"devices", FN(mod_devices), METH_NOARGS,
     "[(name, description, plugin, kind, emulated, memory_bytes, dtype_mask)]"},
    {"plugins", FN(mod_plugins), METH_NOARGS,
     "[(name, description, path, abi_version, features)]"},
    {"diagnostics", FN(mod_diagnostics), METH_NOARGS, "Plugins refused during discovery."},
    {"load_plugin", FN(mod_load_plugin), METH_O, "Loads one more plugin by path."},
    {"library_path", FN(mod_library_path), METH_NOARGS, "Path of the libaxle in use."},
    {"version", FN(mod_version), METH_NOARGS, "Run-time libaxle version string."},
    {"_tensor_data_ptr", FN(mod_tensor_data_ptr), METH_O,
     "Debug: data pointer of an Axle tensor (or an array viewing one) or Buffer."},
    {"_dtype_info", FN(mod_dtype_info), METH_O, "(name, buffer format, itemsize) of a dtype code."},
    {"_raise_status", FN(mod_raise_status), METH_VARARGS,
     "Debug: raises the exception mapped from a status code."},
    {"_setup", FN(mod_setup), METH_VARARGS, "Registers the Python-side helpers."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "axle._axle",
    .m_doc = "CPython extension over the Axle C API (use the axle package).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__axle(void) {
  if (PyType_Ready(&TensorType) < 0 || PyType_Ready(&BufferType) < 0 ||
      PyType_Ready(&SessionType) < 0 || PyType_Ready(&AsyncRunType) < 0)
    return NULL;
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return NULL;
  struct {
    const char* name;
    PyTypeObject* type;
  } types[] = {{"Tensor", &TensorType},
               {"Buffer", &BufferType},
               {"Session", &SessionType},
               {"AsyncRun", &AsyncRunType}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
    Py_INCREF(types[i].type);
    if (PyModule_AddObject(m, types[i].name, (PyObject*)types[i].type) < 0) {
      Py_DECREF(types[i].type);
      Py_DECREF(m);
      return NULL;
    }
  }
  if (PyModule_AddIntConstant(m, "SESSION_STRICT", AXLE_SESSION_STRICT) < 0 ||
      PyModule_AddIntConstant(m, "SESSION_PROFILE", AXLE_SESSION_PROFILE) < 0 ||
      PyModule_AddIntConstant(m, "MAX_RANK", AXLE_MAX_RANK) < 0 ||
      PyModule_AddStringConstant(m, "HEADER_VERSION", AXLE_VERSION_STRING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
