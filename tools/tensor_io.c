/* Tensor files for the axle tool: .npy read/write, PGM/PPM read, conversion
 * to a model input's dtype and layout. See tensor_io.h. */
#include "tensor_io.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "axle_kernels_elementwise.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6

static int fail(char* err, size_t err_size, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char* err, size_t err_size, const char* fmt, ...) {
  if (err && err_size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
  }
  return -1;
}

tio_kind_t tio_kind_from_path(const char* path) {
  const char* dot = strrchr(path, '.');
  if (!dot) return TIO_KIND_UNKNOWN;
  if (strcasecmp(dot, ".npy") == 0) return TIO_KIND_NPY;
  if (strcasecmp(dot, ".pgm") == 0) return TIO_KIND_PGM;
  if (strcasecmp(dot, ".ppm") == 0) return TIO_KIND_PPM;
  return TIO_KIND_UNKNOWN;
}

/* ------------------------------------------------------------------------ */
/* Element access                                                            */
/* ------------------------------------------------------------------------ */

int tio_dtype_is_float(axle_dtype_t dtype) {
  return dtype == AXLE_DTYPE_F32 || dtype == AXLE_DTYPE_F64 || dtype == AXLE_DTYPE_F16 ||
         dtype == AXLE_DTYPE_BF16;
}

int tio_dtype_is_numeric(axle_dtype_t dtype) {
  switch (dtype) {
    case AXLE_DTYPE_F32: case AXLE_DTYPE_F64: case AXLE_DTYPE_F16: case AXLE_DTYPE_BF16:
    case AXLE_DTYPE_U8: case AXLE_DTYPE_I8: case AXLE_DTYPE_U16: case AXLE_DTYPE_I16:
    case AXLE_DTYPE_U32: case AXLE_DTYPE_I32: case AXLE_DTYPE_U64: case AXLE_DTYPE_I64:
    case AXLE_DTYPE_BOOL:
      return 1;
    default:
      return 0;
  }
}

/* memcpy keeps unaligned element access defined (npy payloads are only
 * 16/64-byte aligned relative to the file start, not to our buffer). */
#define LOAD(T) do { T v_; memcpy(&v_, p + i * sizeof(T), sizeof(T)); return (double)v_; } while (0)

double tio_get(const void* data, axle_dtype_t dtype, size_t i) {
  const unsigned char* p = data;
  switch (dtype) {
    case AXLE_DTYPE_F32: LOAD(float);
    case AXLE_DTYPE_F64: LOAD(double);
    case AXLE_DTYPE_U8: LOAD(uint8_t);
    case AXLE_DTYPE_I8: LOAD(int8_t);
    case AXLE_DTYPE_U16: LOAD(uint16_t);
    case AXLE_DTYPE_I16: LOAD(int16_t);
    case AXLE_DTYPE_U32: LOAD(uint32_t);
    case AXLE_DTYPE_I32: LOAD(int32_t);
    case AXLE_DTYPE_U64: LOAD(uint64_t);
    case AXLE_DTYPE_I64: LOAD(int64_t);
    case AXLE_DTYPE_BOOL: return p[i] ? 1.0 : 0.0;
    case AXLE_DTYPE_F16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      return axle_f32_from_f16(h);
    }
    case AXLE_DTYPE_BF16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      return axle_f32_from_bf16(h);
    }
    default:
      return 0.0;
  }
}
#undef LOAD

/* Rounds half away from zero and saturates, so out-of-range values (e.g. a
 * scaled pixel above 255) clamp instead of wrapping. */
static double clamp_round(double v, double lo, double hi) {
  if (isnan(v)) return 0.0;
  v = round(v);
  return v < lo ? lo : v > hi ? hi : v;
}

#define STORE(T, expr) do { T v_ = (T)(expr); memcpy(p + i * sizeof(T), &v_, sizeof(T)); return; } while (0)

void tio_set(void* data, axle_dtype_t dtype, size_t i, double v) {
  unsigned char* p = data;
  switch (dtype) {
    case AXLE_DTYPE_F32: STORE(float, v);
    case AXLE_DTYPE_F64: STORE(double, v);
    case AXLE_DTYPE_U8: STORE(uint8_t, clamp_round(v, 0, UINT8_MAX));
    case AXLE_DTYPE_I8: STORE(int8_t, clamp_round(v, INT8_MIN, INT8_MAX));
    case AXLE_DTYPE_U16: STORE(uint16_t, clamp_round(v, 0, UINT16_MAX));
    case AXLE_DTYPE_I16: STORE(int16_t, clamp_round(v, INT16_MIN, INT16_MAX));
    case AXLE_DTYPE_U32: STORE(uint32_t, clamp_round(v, 0, UINT32_MAX));
    case AXLE_DTYPE_I32: STORE(int32_t, clamp_round(v, INT32_MIN, INT32_MAX));
    case AXLE_DTYPE_U64: {
      /* 2^64 is exact in double but UINT64_MAX is not: compare against the
       * power of two so the conversion never overflows. */
      double r = clamp_round(v, 0, 18446744073709551616.0);
      STORE(uint64_t, r >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)r);
    }
    case AXLE_DTYPE_I64: {
      double r = clamp_round(v, -9223372036854775808.0, 9223372036854775808.0);
      STORE(int64_t, r >= 9223372036854775808.0 ? INT64_MAX : (int64_t)r);
    }
    case AXLE_DTYPE_BOOL: p[i] = (v != 0.0 && !isnan(v)) ? 1 : 0; return;
    case AXLE_DTYPE_F16:
      STORE(uint16_t, axle_f16_from_f64(v));
    case AXLE_DTYPE_BF16:
      STORE(uint16_t, axle_bf16_from_f64(v));
    default: return;
  }
}
#undef STORE

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

static int read_file(const char* path, unsigned char** out, size_t* out_size, char* err,
                     size_t err_size) {
  *out = NULL;
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return fail(err, err_size, "%s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  unsigned char* buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char* bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) return fail(err, err_size, "%s: out of memory reading the file", path);
  if (bad) {
    free(buf);
    return fail(err, err_size, "%s: read error", path);
  }
  *out = buf;
  *out_size = n;
  return 0;
}

static int mul_overflows(size_t a, size_t b, size_t* out) {
  if (a != 0 && b > SIZE_MAX / a) return 1;
  *out = a * b;
  return 0;
}

void tio_format_shape(char* buf, size_t size, uint32_t rank, const int64_t* shape) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (uint32_t i = 0; i < rank && used < size; i++) {
    if (shape[i] < 0)
      used += (size_t)snprintf(buf + used, size - used, "%s?", i ? ", " : "");
    else
      used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                               (long long)shape[i]);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* ---- .npy ---- */

static const char* skip_ws(const char* s, const char* end) {
  while (s < end && isspace((unsigned char)*s)) s++;
  return s;
}

/* Finds 'key': in the header dict and returns the position after the colon. */
static const char* npy_find_key(const char* h, const char* end, const char* key) {
  size_t klen = strlen(key);
  for (const char* s = h; s + klen + 2 <= end; s++) {
    if ((*s == '\'' || *s == '"') && s[klen + 1] == *s && memcmp(s + 1, key, klen) == 0) {
      const char* c = skip_ws(s + klen + 2, end);
      if (c < end && *c == ':') return skip_ws(c + 1, end);
    }
  }
  return NULL;
}

typedef struct npy_dtype_t {
  const char* code; /* kind + size, after the byte-order character */
  axle_dtype_t dtype;
} npy_dtype_t;

static const npy_dtype_t kNpyTypes[] = {
    {"f2", AXLE_DTYPE_F16}, {"f4", AXLE_DTYPE_F32}, {"f8", AXLE_DTYPE_F64},
    {"u1", AXLE_DTYPE_U8},  {"i1", AXLE_DTYPE_I8},  {"u2", AXLE_DTYPE_U16},
    {"i2", AXLE_DTYPE_I16}, {"u4", AXLE_DTYPE_U32}, {"i4", AXLE_DTYPE_I32},
    {"u8", AXLE_DTYPE_U64}, {"i8", AXLE_DTYPE_I64}, {"b1", AXLE_DTYPE_BOOL},
};

static int npy_parse_header(const char* path, const char* h, const char* end,
                            axle_dtype_t* dtype, uint32_t* rank, int64_t* shape, char* err,
                            size_t err_size) {
  const char* v = npy_find_key(h, end, "descr");
  if (!v || (*v != '\'' && *v != '"'))
    return fail(err, err_size, "%s: .npy header has no simple 'descr' (structured arrays are "
                "not supported)", path);
  char quote = *v++;
  const char* close = memchr(v, quote, (size_t)(end - v));
  if (!close || close - v > 15) return fail(err, err_size, "%s: bad .npy 'descr'", path);
  char descr[16];
  memcpy(descr, v, (size_t)(close - v));
  descr[close - v] = '\0';
  char order = descr[0];
  const char* code = descr + 1;
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '=';
    code = descr;
  }
  *dtype = AXLE_DTYPE_UNDEFINED;
  for (size_t i = 0; i < sizeof kNpyTypes / sizeof kNpyTypes[0]; i++)
    if (strcmp(code, kNpyTypes[i].code) == 0) *dtype = kNpyTypes[i].dtype;
  if (*dtype == AXLE_DTYPE_UNDEFINED)
    return fail(err, err_size, "%s: .npy dtype '%s' is not supported (f2 f4 f8 u1 i1 u2 i2 u4 "
                "i4 u8 i8 b1 are)", path, descr);
  if (order == '>' && axle_dtype_size(*dtype) > 1)
    return fail(err, err_size, "%s: big-endian .npy data ('%s') is not supported; save it "
                "with arr.astype(arr.dtype.newbyteorder('<'))", path, descr);

  v = npy_find_key(h, end, "fortran_order");
  if (!v) return fail(err, err_size, "%s: .npy header lacks 'fortran_order'", path);
  if ((size_t)(end - v) >= 4 && memcmp(v, "True", 4) == 0)
    return fail(err, err_size, "%s: Fortran-order .npy arrays are not supported; save "
                "np.ascontiguousarray(arr)", path);

  v = npy_find_key(h, end, "shape");
  if (!v || *v != '(') return fail(err, err_size, "%s: .npy header lacks 'shape'", path);
  v++;
  *rank = 0;
  for (;;) {
    v = skip_ws(v, end);
    if (v < end && *v == ')') break;
    if (v >= end || !isdigit((unsigned char)*v))
      return fail(err, err_size, "%s: bad .npy shape", path);
    if (*rank == AXLE_MAX_RANK)
      return fail(err, err_size, "%s: .npy rank exceeds %d", path, AXLE_MAX_RANK);
    errno = 0;
    char* num_end;
    long long d = strtoll(v, &num_end, 10);
    if (errno || d < 0) return fail(err, err_size, "%s: bad .npy dimension", path);
    shape[(*rank)++] = d;
    v = skip_ws(num_end, end);
    if (v < end && *v == ',') v++;
  }
  return 0;
}

int tio_read_npy(const char* path, axle_tensor_t** out, char* err, size_t err_size) {
  *out = NULL;
  unsigned char* buf;
  size_t size;
  if (read_file(path, &buf, &size, err, err_size)) return -1;
  int rc = -1;
  if (size < 10 || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    fail(err, err_size, "%s: not a .npy file (bad magic)", path);
    goto done;
  }
  unsigned major = buf[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) {
      fail(err, err_size, "%s: truncated .npy header", path);
      goto done;
    }
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    hstart = 12;
  } else {
    fail(err, err_size, "%s: .npy format version %u is not supported", path, major);
    goto done;
  }
  if (hlen > size - hstart) {
    fail(err, err_size, "%s: truncated .npy header", path);
    goto done;
  }
  axle_dtype_t dtype = AXLE_DTYPE_UNDEFINED;
  uint32_t rank = 0;
  int64_t shape[AXLE_MAX_RANK];
  const char* h = (const char*)buf + hstart;
  if (npy_parse_header(path, h, h + hlen, &dtype, &rank, shape, err, err_size)) goto done;

  size_t count = 1, bytes;
  for (uint32_t i = 0; i < rank; i++) {
    if ((uint64_t)shape[i] > SIZE_MAX || mul_overflows(count, (size_t)shape[i], &count)) {
      fail(err, err_size, "%s: .npy shape too large", path);
      goto done;
    }
  }
  if (mul_overflows(count, axle_dtype_size(dtype), &bytes)) {
    fail(err, err_size, "%s: .npy shape too large", path);
    goto done;
  }
  size_t data_at = hstart + hlen;
  if (size - data_at < bytes) {
    fail(err, err_size, "%s: truncated .npy data (%zu of %zu bytes)", path, size - data_at, bytes);
    goto done;
  }
  axle_tensor_t* t;
  axle_status_t st = axle_tensor_create(dtype, rank, shape, &t);
  if (st != AXLE_OK) {
    fail(err, err_size, "%s: %s: %s", path, axle_status_string(st), axle_status_message());
    goto done;
  }
  if (bytes) memcpy(axle_tensor_data(t), buf + data_at, bytes);
  *out = t;
  rc = 0;
done:
  free(buf);
  return rc;
}

static const char* npy_descr(axle_dtype_t dtype) {
  switch (dtype) {
    case AXLE_DTYPE_F16: return "<f2";
    case AXLE_DTYPE_F32: return "<f4";
    case AXLE_DTYPE_F64: return "<f8";
    case AXLE_DTYPE_U8: return "|u1";
    case AXLE_DTYPE_I8: return "|i1";
    case AXLE_DTYPE_U16: return "<u2";
    case AXLE_DTYPE_I16: return "<i2";
    case AXLE_DTYPE_U32: return "<u4";
    case AXLE_DTYPE_I32: return "<i4";
    case AXLE_DTYPE_U64: return "<u8";
    case AXLE_DTYPE_I64: return "<i8";
    case AXLE_DTYPE_BOOL: return "|b1";
    default: return NULL;
  }
}

int tio_write_npy(const char* path, axle_tensor_t* tensor, char* err, size_t err_size) {
  axle_dtype_t dtype = axle_tensor_dtype(tensor);
  axle_dtype_t file_dtype = dtype == AXLE_DTYPE_BF16 ? AXLE_DTYPE_F32 : dtype;
  const char* descr = npy_descr(file_dtype);
  if (!descr)
    return fail(err, err_size, "%s: cannot write %s tensors as .npy", path,
                axle_dtype_name(dtype));
  uint32_t rank = axle_tensor_rank(tensor);
  const int64_t* shape = axle_tensor_shape(tensor);

  char dict[64 + AXLE_MAX_RANK * 24];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (uint32_t i = 0; i < rank; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                  rank == 1 ? "," : i + 1 < rank ? ", " : "");
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");

  /* NumPy pads the header with spaces and a newline so that the data starts
   * on a 64-byte boundary, which lets readers memory-map it aligned. */
  size_t prefix = 10, total = prefix + (size_t)n + 1;
  total = (total + 63) / 64 * 64;
  size_t hlen = total - prefix;
  unsigned char head[sizeof dict + 128];
  memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
  head[6] = 1;
  head[7] = 0;
  head[8] = (unsigned char)(hlen & 0xff);
  head[9] = (unsigned char)(hlen >> 8);
  memcpy(head + prefix, dict, (size_t)n);
  memset(head + prefix + n, ' ', hlen - (size_t)n - 1);
  head[total - 1] = '\n';

  FILE* f = fopen(path, "wb");
  if (!f) return fail(err, err_size, "%s: %s", path, strerror(errno));
  int ok = fwrite(head, 1, total, f) == total;
  size_t count = (size_t)axle_tensor_element_count(tensor);
  const void* data = axle_tensor_data(tensor);
  if (ok && count && !data) {
    fclose(f);
    return fail(err, err_size, "%s: tensor data is not accessible on the host", path);
  }
  if (ok && dtype == AXLE_DTYPE_BF16) {
    for (size_t i = 0; ok && i < count; i++) {
      float v = (float)tio_get(data, dtype, i);
      ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
  } else if (ok && count) {
    ok = fwrite(data, axle_dtype_size(dtype), count, f) == count;
  }
  if (fclose(f) != 0) ok = 0;
  if (!ok) return fail(err, err_size, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

/* ---- PGM / PPM ---- */

/* Next header token, skipping whitespace and '#' comments. */
static int pnm_number(const unsigned char* buf, size_t size, size_t* pos, unsigned long* out) {
  size_t p = *pos;
  for (;;) {
    while (p < size && isspace(buf[p])) p++;
    if (p < size && buf[p] == '#') {
      while (p < size && buf[p] != '\n' && buf[p] != '\r') p++;
      continue;
    }
    break;
  }
  if (p >= size || !isdigit(buf[p])) return -1;
  unsigned long v = 0;
  while (p < size && isdigit(buf[p])) {
    if (v > 100000000ul) return -1;
    v = v * 10 + (unsigned long)(buf[p++] - '0');
  }
  *out = v;
  *pos = p;
  return 0;
}

int tio_read_pnm(const char* path, tio_image_t* out, char* err, size_t err_size) {
  memset(out, 0, sizeof *out);
  unsigned char* buf;
  size_t size;
  if (read_file(path, &buf, &size, err, err_size)) return -1;
  int rc = -1;
  if (size < 2 || buf[0] != 'P' || (buf[1] != '5' && buf[1] != '6')) {
    fail(err, err_size, "%s: not a binary PGM (P5) or PPM (P6) image", path);
    goto done;
  }
  unsigned channels = buf[1] == '5' ? 1 : 3;
  size_t pos = 2;
  unsigned long w, h, maxval;
  if (pnm_number(buf, size, &pos, &w) || pnm_number(buf, size, &pos, &h) ||
      pnm_number(buf, size, &pos, &maxval) || w == 0 || h == 0 || maxval == 0) {
    fail(err, err_size, "%s: bad PNM header", path);
    goto done;
  }
  if (maxval > 255) {
    fail(err, err_size, "%s: 16-bit images (maxval %lu) are not supported", path, maxval);
    goto done;
  }
  /* Exactly one whitespace byte separates the header from the raster. */
  if (pos >= size || !isspace(buf[pos])) {
    fail(err, err_size, "%s: bad PNM header", path);
    goto done;
  }
  pos++;
  size_t n = (size_t)w * h * channels;
  if (size - pos < n) {
    fail(err, err_size, "%s: truncated image data (%zu of %zu bytes)", path, size - pos, n);
    goto done;
  }
  out->pixels = malloc(n);
  if (!out->pixels) {
    fail(err, err_size, "%s: out of memory", path);
    goto done;
  }
  /* Rescale other maxvals to 0..255 so that --scale means the same for
   * every file. */
  for (size_t i = 0; i < n; i++) {
    unsigned v = buf[pos + i];
    if (v > maxval) v = (unsigned)maxval;
    out->pixels[i] = maxval == 255 ? (uint8_t)v : (uint8_t)((v * 255u + maxval / 2) / maxval);
  }
  out->width = (uint32_t)w;
  out->height = (uint32_t)h;
  out->channels = channels;
  rc = 0;
done:
  free(buf);
  return rc;
}

void tio_image_free(tio_image_t* image) {
  if (!image) return;
  free(image->pixels);
  image->pixels = NULL;
}

/* ------------------------------------------------------------------------ */
/* Conversion to a model input                                               */
/* ------------------------------------------------------------------------ */

typedef enum layout_t { L_NCHW, L_NHWC, L_CHW, L_HWC, L_HW } layout_t;

static int is_channels(int64_t d) { return d == 1 || d == 3; }

static int image_to_tensor(const char* path, const tio_image_t* im, const axle_tensor_info_t* want,
                           const tio_image_options_t* opt, axle_tensor_t** out, char* err,
                           size_t err_size) {
  axle_dtype_t dtype = want && want->dtype != AXLE_DTYPE_UNDEFINED ? want->dtype : AXLE_DTYPE_U8;
  if (!tio_dtype_is_numeric(dtype))
    return fail(err, err_size, "%s: cannot convert an image to %s", path, axle_dtype_name(dtype));
  uint32_t rank = want ? want->rank : 4;
  const int64_t* s = want ? want->shape : NULL;
  layout_t layout;
  int64_t c_dim; /* the input's channel dim (may be symbolic) */
  char wants[128] = "";
  if (want) tio_format_shape(wants, sizeof wants, want->rank, want->shape);

  /* Pick the layout from where a 1 or 3 sits; NCHW wins ties because that is
   * what ONNX vision models use. */
  if (!want) {
    layout = L_NCHW;
    c_dim = im->channels;
  } else if (rank == 4 && (is_channels(s[1]) || (s[1] < 0 && !is_channels(s[3])))) {
    layout = L_NCHW;
    c_dim = s[1];
  } else if (rank == 4 && is_channels(s[3])) {
    layout = L_NHWC;
    c_dim = s[3];
  } else if (rank == 3 && (is_channels(s[0]) || (s[0] < 0 && !is_channels(s[2])))) {
    layout = L_CHW;
    c_dim = s[0];
  } else if (rank == 3 && is_channels(s[2])) {
    layout = L_HWC;
    c_dim = s[2];
  } else if (rank == 2) {
    layout = L_HW;
    c_dim = 1;
  } else {
    return fail(err, err_size, "%s: cannot lay out a %ux%u image as input '%s' %s", path,
                im->width, im->height, want->name ? want->name : "?", wants);
  }
  if (rank == 4 && s && s[0] >= 0 && s[0] != 1)
    return fail(err, err_size, "%s: input '%s' %s has batch %lld; one image fills batch 1", path,
                want->name ? want->name : "?", wants, (long long)s[0]);
  uint32_t channels = c_dim < 0 ? im->channels : (uint32_t)c_dim;
  int64_t hd, wd;
  switch (layout) {
    case L_NCHW: hd = s ? s[2] : -1; wd = s ? s[3] : -1; break;
    case L_NHWC: hd = s[1]; wd = s[2]; break;
    case L_CHW: hd = s[1]; wd = s[2]; break;
    case L_HWC: hd = s[0]; wd = s[1]; break;
    default: hd = s[0]; wd = s[1]; break;
  }
  if ((hd >= 0 && hd != im->height) || (wd >= 0 && wd != im->width))
    return fail(err, err_size, "%s: image is %ux%u (WxH) but input '%s' wants %s; resize it "
                "first", path, im->width, im->height, want->name ? want->name : "?", wants);

  int64_t shape[4];
  int64_t H = im->height, W = im->width, C = channels;
  switch (layout) {
    case L_NCHW: shape[0] = 1; shape[1] = C; shape[2] = H; shape[3] = W; break;
    case L_NHWC: shape[0] = 1; shape[1] = H; shape[2] = W; shape[3] = C; break;
    case L_CHW: shape[0] = C; shape[1] = H; shape[2] = W; break;
    case L_HWC: shape[0] = H; shape[1] = W; shape[2] = C; break;
    default: shape[0] = H; shape[1] = W; break;
  }
  axle_tensor_t* t;
  axle_status_t st = axle_tensor_create(dtype, rank, shape, &t);
  if (st != AXLE_OK)
    return fail(err, err_size, "%s: %s: %s", path, axle_status_string(st), axle_status_message());
  void* data = axle_tensor_data(t);

  tio_image_options_t defaults = TIO_IMAGE_OPTIONS_DEFAULT;
  if (!opt) opt = &defaults;
  int quantized = !tio_dtype_is_float(dtype) && want && want->quant.count == 1 &&
                  want->quant.scales && want->quant.scales[0] > 0.0f;
  double qscale = quantized ? want->quant.scales[0] : 1.0;
  double qzero = quantized && want->quant.zero_points ? want->quant.zero_points[0] : 0.0;
  int chw = layout == L_NCHW || layout == L_CHW || layout == L_HW;

  for (int64_t c = 0; c < C; c++) {
    for (int64_t y = 0; y < H; y++) {
      for (int64_t x = 0; x < W; x++) {
        const uint8_t* px = im->pixels + ((size_t)y * W + x) * im->channels;
        double v;
        if (im->channels == (uint32_t)C)
          v = px[c];
        else if (im->channels == 1)
          v = px[0];  /* grey repeated into every channel */
        else
          v = 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]; /* ITU-R BT.601 luma */
        if (opt->invert) v = 255.0 - v;
        if (tio_dtype_is_float(dtype))
          v *= opt->scale;
        else if (quantized)
          v = v * opt->scale / qscale + qzero;
        size_t idx = chw ? ((size_t)c * H + y) * W + x : ((size_t)y * W + x) * C + c;
        tio_set(data, dtype, idx, v);
      }
    }
  }
  *out = t;
  return 0;
}

/* Casts/reshapes a loaded .npy to the input's dtype and shape. */
static int npy_to_input(const char* path, axle_tensor_t* src, const axle_tensor_info_t* want,
                        axle_tensor_t** out, char* err, size_t err_size) {
  uint32_t rank = axle_tensor_rank(src);
  const int64_t* fshape = axle_tensor_shape(src);
  axle_dtype_t fdtype = axle_tensor_dtype(src);
  int64_t count = axle_tensor_element_count(src);
  const int64_t* shape = NULL;

  int same_rank_fits = want->rank == rank;
  for (uint32_t i = 0; same_rank_fits && i < rank; i++)
    if (want->shape[i] >= 0 && want->shape[i] != fshape[i]) same_rank_fits = 0;
  int concrete = 1;
  int64_t want_count = 1;
  for (uint32_t i = 0; i < want->rank; i++) {
    if (want->shape[i] < 0) concrete = 0;
    else want_count *= want->shape[i];
  }
  if (same_rank_fits) {
    shape = fshape;
  } else if (want->rank == 0 && count != 1) {
    /* Rank 0 with a non-scalar file: the model declares no shape; let the
     * session judge the file's. */
    shape = fshape;
  } else if (concrete && want_count == count) {
    shape = want->shape;
    rank = want->rank;
  } else {
    char have[128], wants[128];
    tio_format_shape(have, sizeof have, rank, fshape);
    tio_format_shape(wants, sizeof wants, want->rank, want->shape);
    return fail(err, err_size, "%s: array shape %s does not fit input '%s' %s", path, have,
                want->name ? want->name : "?", wants);
  }
  axle_dtype_t dtype = want->dtype == AXLE_DTYPE_UNDEFINED ? fdtype : want->dtype;
  if (dtype != fdtype && !tio_dtype_is_numeric(dtype))
    return fail(err, err_size, "%s: cannot convert %s to %s for input '%s'", path,
                axle_dtype_name(fdtype), axle_dtype_name(dtype), want->name ? want->name : "?");

  axle_tensor_t* t;
  axle_status_t st = axle_tensor_create(dtype, rank, shape, &t);
  if (st != AXLE_OK)
    return fail(err, err_size, "%s: %s: %s", path, axle_status_string(st), axle_status_message());
  const void* from = axle_tensor_data(src);
  void* to = axle_tensor_data(t);
  if (dtype == fdtype) {
    if (count) memcpy(to, from, (size_t)count * axle_dtype_size(dtype));
  } else {
    for (int64_t i = 0; i < count; i++) tio_set(to, dtype, (size_t)i, tio_get(from, fdtype, (size_t)i));
  }
  *out = t;
  return 0;
}

int tio_load_for_input(const char* path, const axle_tensor_info_t* want,
                       const tio_image_options_t* img, axle_tensor_t** out, char* err,
                       size_t err_size) {
  *out = NULL;
  switch (tio_kind_from_path(path)) {
    case TIO_KIND_NPY: {
      axle_tensor_t* raw;
      if (tio_read_npy(path, &raw, err, err_size)) return -1;
      if (!want) {
        *out = raw;
        return 0;
      }
      int rc = npy_to_input(path, raw, want, out, err, err_size);
      axle_tensor_release(raw);
      return rc;
    }
    case TIO_KIND_PGM:
    case TIO_KIND_PPM: {
      tio_image_t im;
      if (tio_read_pnm(path, &im, err, err_size)) return -1;
      int rc = image_to_tensor(path, &im, want, img, out, err, err_size);
      tio_image_free(&im);
      return rc;
    }
    default:
      return fail(err, err_size, "%s: unknown file type (use .npy, .pgm or .ppm)", path);
  }
}
