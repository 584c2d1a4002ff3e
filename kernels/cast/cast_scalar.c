/*
 * Cast between every fixed-size ONNX dtype. Each source loads into a carrier
 * (double for floating types, int64 for signed and bool, uint64 for
 * unsigned), each destination stores from any of the three; a cast runs
 * load + store over stack chunks. That is 13 loads and 39 stores generated
 * from one type list instead of 169 pairwise loops, and every pair follows
 * the same rules (see axle_cast_t in axle_kernels_elementwise.h).
 */
#include <string.h>

#include "axle_kernels_elementwise.h"

/* X(name, ONNX code, C type, kind, low, high). Kinds: F float, H float16,
 * B bfloat16, S signed, U unsigned, Z bool. */
#define AXLE_CAST_TYPES(X)                                  \
  X(float32, 1, float, F, 0, 0)                             \
  X(uint8, 2, uint8_t, U, 0, UINT8_MAX)                     \
  X(int8, 3, int8_t, S, INT8_MIN, INT8_MAX)                 \
  X(uint16, 4, uint16_t, U, 0, UINT16_MAX)                  \
  X(int16, 5, int16_t, S, INT16_MIN, INT16_MAX)             \
  X(int32, 6, int32_t, S, INT32_MIN, INT32_MAX)             \
  X(int64, 7, int64_t, S, INT64_MIN, INT64_MAX)             \
  X(bool, 9, uint8_t, Z, 0, 1)                              \
  X(float16, 10, uint16_t, H, 0, 0)                         \
  X(float64, 11, double, F, 0, 0)                           \
  X(uint32, 12, uint32_t, U, 0, UINT32_MAX)                 \
  X(uint64, 13, uint64_t, U, 0, UINT64_MAX)                 \
  X(bfloat16, 16, uint16_t, B, 0, 0)

/* Carrier of each kind: d(ouble), i(nt64), u(int64). */
#define AXLE_CARRIER_F d
#define AXLE_CARRIER_H d
#define AXLE_CARRIER_B d
#define AXLE_CARRIER_S i
#define AXLE_CARRIER_U u
#define AXLE_CARRIER_Z i
typedef double carrier_d;
typedef int64_t carrier_i;
typedef uint64_t carrier_u;

#define AXLE_LOAD_F(v) ((double)(v))
#define AXLE_LOAD_H(v) ((double)axle_f32_from_f16(v))
#define AXLE_LOAD_B(v) ((double)axle_f32_from_bf16(v))
#define AXLE_LOAD_S(v) ((int64_t)(v))
#define AXLE_LOAD_U(v) ((uint64_t)(v))
#define AXLE_LOAD_Z(v) ((int64_t)((v) != 0))

#define AXLE_PASTE_(a, b) a##b
#define AXLE_PASTE(a, b) AXLE_PASTE_(a, b)
#define AXLE_CARRIER_T(kind) AXLE_PASTE(carrier_, AXLE_CARRIER_##kind)

#define AXLE_DEFINE_LOAD_(name, code, T, kind, lo, hi)                        \
  static void load_##name(const void* vx, void* vc, size_t n) {               \
    const T* x = vx;                                                          \
    AXLE_CARRIER_T(kind)* c = vc;                                             \
    for (size_t i = 0; i < n; ++i) c[i] = (AXLE_CARRIER_T(kind))AXLE_LOAD_##kind(x[i]); \
  }
AXLE_CAST_TYPES(AXLE_DEFINE_LOAD_)

/* Stores: one expression per (destination kind, carrier). */
#define AXLE_STORE_F_d(T, lo, hi, v) ((T)(v))
#define AXLE_STORE_F_i AXLE_STORE_F_d
#define AXLE_STORE_F_u AXLE_STORE_F_d
#define AXLE_STORE_H_d(T, lo, hi, v) axle_f16_from_f64((double)(v))
#define AXLE_STORE_H_i AXLE_STORE_H_d
#define AXLE_STORE_H_u AXLE_STORE_H_d
#define AXLE_STORE_B_d(T, lo, hi, v) axle_bf16_from_f64((double)(v))
#define AXLE_STORE_B_i AXLE_STORE_B_d
#define AXLE_STORE_B_u AXLE_STORE_B_d
/* float -> int: truncation as C does for in-range values; out-of-range values
 * (undefined in C and in ONNX) saturate and NaN becomes 0, so the result is
 * deterministic and sanitizer-clean. The bounds compare as doubles: for
 * 64-bit types (double)MAX rounds up to 2^63 / 2^64, which is exactly the
 * first value that must saturate. */
#define AXLE_STORE_S_d(T, lo, hi, v)                                              \
  ((v) != (v) ? (T)0 : (v) <= (double)(lo) ? (T)(lo) : (v) >= (double)(hi) ? (T)(hi) \
                                                                             : (T)(v))
#define AXLE_STORE_S_i(T, lo, hi, v) ((T)(v)) /* int -> int wraps modulo 2^N */
#define AXLE_STORE_S_u AXLE_STORE_S_i
#define AXLE_STORE_U_d AXLE_STORE_S_d
#define AXLE_STORE_U_i AXLE_STORE_S_i
#define AXLE_STORE_U_u AXLE_STORE_S_i
#define AXLE_STORE_Z_d(T, lo, hi, v) ((T)((v) != 0))
#define AXLE_STORE_Z_i AXLE_STORE_Z_d
#define AXLE_STORE_Z_u AXLE_STORE_Z_d

#define AXLE_DEFINE_STORE_ONE_(name, T, kind, lo, hi, car)                   \
  static void store_##name##_##car(const void* vc, void* vy, size_t n) {     \
    const carrier_##car* c = vc;                                             \
    T* y = vy;                                                               \
    for (size_t i = 0; i < n; ++i) y[i] = AXLE_STORE_##kind##_##car(T, lo, hi, c[i]); \
  }
#define AXLE_DEFINE_STORE_(name, code, T, kind, lo, hi)   \
  AXLE_DEFINE_STORE_ONE_(name, T, kind, lo, hi, d)        \
  AXLE_DEFINE_STORE_ONE_(name, T, kind, lo, hi, i)        \
  AXLE_DEFINE_STORE_ONE_(name, T, kind, lo, hi, u)
AXLE_CAST_TYPES(AXLE_DEFINE_STORE_)

typedef struct cast_type_t {
  int32_t code;
  const char* name;
  size_t size;
  char carrier; /* 'd', 'i' or 'u' */
  void (*load)(const void*, void*, size_t);
  void (*store[3])(const void*, void*, size_t); /* from d, i, u */
} cast_type_t;

#define AXLE_STR_(x) #x
#define AXLE_STR(x) AXLE_STR_(x)
#define AXLE_CAST_ENTRY_(name, code, T, kind, lo, hi)                                   \
  {code, #name, sizeof(T), AXLE_STR(AXLE_CARRIER_##kind)[0], load_##name,               \
   {store_##name##_d, store_##name##_i, store_##name##_u}},
static const cast_type_t k_types[] = {AXLE_CAST_TYPES(AXLE_CAST_ENTRY_)};

static const cast_type_t* find_type(int32_t code) {
  for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; ++i)
    if (k_types[i].code == code) return &k_types[i];
  return NULL;
}

const char* axle_cast_dtype_name(int32_t dtype) {
  if (dtype == 8) return "string";
  const cast_type_t* t = find_type(dtype);
  return t ? t->name : NULL;
}

int axle_cast_plan(int32_t src, int32_t dst, axle_cast_t* plan) {
  const cast_type_t* s = find_type(src);
  const cast_type_t* d = find_type(dst);
  if (!s || !d) return -1;
  plan->load = s->load;
  plan->store = d->store[s->carrier == 'd' ? 0 : s->carrier == 'i' ? 1 : 2];
  plan->src_size = s->size;
  plan->dst_size = d->size;
  /* bool <-> uint8 is not a copy: a bool byte need not be canonical 0/1. */
  plan->copy = src == dst;
  return 0;
}

/* 2 KiB of carrier per chunk: large enough to amortise the two calls, small
 * enough for any thread's stack. */
#define AXLE_CAST_CHUNK 256

void axle_cast_scalar(const axle_cast_t* plan, const void* x, void* y, size_t n) {
  if (plan->copy) {
    axle_copy_bytes_scalar(y, x, n * plan->src_size);
    return;
  }
  union {
    double d[AXLE_CAST_CHUNK];
    int64_t i[AXLE_CAST_CHUNK];
    uint64_t u[AXLE_CAST_CHUNK];
  } carrier;
  const size_t xs = plan->src_size, ys = plan->dst_size;
  for (size_t i = 0; i < n; i += AXLE_CAST_CHUNK) {
    const size_t k = n - i < AXLE_CAST_CHUNK ? n - i : AXLE_CAST_CHUNK;
    plan->load((const char*)x + i * xs, &carrier, k);
    plan->store(&carrier, (char*)y + i * ys, k);
  }
}
