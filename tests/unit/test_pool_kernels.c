/*
 * Tests of the pooling kernels: every ISA variant of the 2-D max and
 * average pooling plane kernels and of global average / max pooling against
 * the scalar reference (averages within a few ulp, their sums running in
 * another order; with and without count_include_pad), on edge shapes (planes narrower than one
 * vector, odd sizes, row tails, padding on every side, ceil-mode windows that run past the input,
 * strides 1 to 3), with NaN and -inf inputs, and through the dispatching entry points under each
 * ISA cap, serially and on threads. Outputs sit between guard words that no variant may write.
 */

#include "kernel_test.h"

enum { GUARD = 16 };
static const float k_guard = 12345.0f;

/* n floats between GUARD guard words on each side; returns the first. */
static float* guarded(size_t n) {
  float* p = kt_array(n + 2 * GUARD);
  for (size_t i = 0; i < GUARD; ++i) p[i] = p[GUARD + n + i] = k_guard;
  return p + GUARD;
}

static void check_guards(const char* what, const float* y, size_t n) {
  for (size_t i = 0; i < GUARD; ++i) {
    if (y[-1 - (ptrdiff_t)i] != k_guard || y[n + i] != k_guard) {
      fprintf(stderr, "\n%s: wrote outside the output\n", what);
      CU_FAIL(what);
      return;
    }
  }
}

static void free_guarded(float* p) { free(p - GUARD); }

/* Bit-for-bit up to the sign of zero and the NaN payload: maxima are
 * chosen, not computed (kt_close would read -inf - -inf as an error). */
static void exact(const char* what, const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))) continue;
    fprintf(stderr, "\n%s: element %zu: got %.9g want %.9g\n", what, i, (double)got[i],
            (double)want[i]);
    CU_FAIL(what);
    return;
  }
  CU_PASS(what);
}

/* ------------------------------------------------------------------------ */
/* 2-D max pooling                                                           */
/* ------------------------------------------------------------------------ */

/* ONNX's output extent: ceil mode drops a last window that would start in
 * the trailing padding. */
static int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int ceil) {
  const int64_t span = in + pb + pe - k;
  if (span < 0) return 0;
  int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + pb) --o;
  return o;
}

static void make_pool(axle_f32_pool_params_t* p, int64_t channels, int64_t ih, int64_t iw,
                      int64_t kh, int64_t kw, int64_t sv, int64_t sh, int64_t pt, int64_t pl,
                      int64_t pb, int64_t pr, int ceil) {
  memset(p, 0, sizeof *p);
  p->channels = channels;
  const int64_t in[3] = {1, ih, iw}, k[3] = {1, kh, kw}, s[3] = {1, sv, sh};
  const int64_t pad[3] = {0, pt, pl}, pad_end[3] = {0, pb, pr};
  for (int d = 0; d < 3; ++d) {
    p->in[d] = in[d];
    p->kernel[d] = k[d];
    p->stride[d] = s[d];
    p->dilation[d] = 1;
    p->pad[d] = pad[d];
    p->pad_end[d] = pad_end[d];
    p->out[d] = out_extent(in[d], k[d], s[d], pad[d], pad_end[d], ceil);
  }
}

typedef int (*supports_fn)(const axle_f32_pool_params_t*);
typedef size_t (*tmp_size_fn)(const axle_f32_pool_params_t*);
typedef void (*plane_fn)(const axle_f32_pool_params_t*, const float*, float*, float*);

typedef struct plane_variant_t {
  const char* name;
  axle_isa_t isa;
  supports_fn supports;
  tmp_size_fn tmp_size;
  plane_fn plane;
  int average;
} plane_variant_t;

static const plane_variant_t k_planes[] = {
    {"maxpool2d avx2", AXLE_ISA_AVX2_FMA, axle_f32_maxpool2d__avx2_supports,
     axle_f32_maxpool2d__avx2_tmp_size, axle_f32_maxpool2d_plane__avx2, 0},
    {"maxpool2d avx512", AXLE_ISA_AVX512, axle_f32_maxpool2d__avx512_supports,
     axle_f32_maxpool2d__avx512_tmp_size, axle_f32_maxpool2d_plane__avx512, 0},
    {"avgpool2d avx2", AXLE_ISA_AVX2_FMA, axle_f32_maxpool2d__avx2_supports,
     axle_f32_avgpool2d__avx2_tmp_size, axle_f32_avgpool2d_plane__avx2, 1},
};

/* Inputs with the values that need care: NaN (skipped), -inf (a window of
 * nothing else yields -inf), and ties. */
static float* pool_input(size_t n) {
  float* x = kt_array(n);
  for (size_t i = 0; i < n; i += 7) x[i] = NAN;
  for (size_t i = 3; i < n; i += 11) x[i] = -INFINITY;
  for (size_t i = 5; i < n; i += 13) x[i] = 0.5f;
  return x;
}

/* Each plane of p through v against the reference; 0 if v does not support
 * p (the caller counts those). */
static int plane_case(const plane_variant_t* v, const axle_f32_pool_params_t* p) {
  if (!v->supports(p)) return 0;
  const size_t in_vol = (size_t)(p->in[1] * p->in[2]), out_vol = (size_t)(p->out[1] * p->out[2]);
  const size_t in_n = (size_t)p->channels * in_vol, out_n = (size_t)p->channels * out_vol;
  /* Averages: NaN in one plane only (it poisons every window it is in). */
  float* x = v->average ? kt_array(in_n) : pool_input(in_n);
  if (v->average && p->channels > 1) x[in_vol + in_vol / 2] = NAN;
  float* want = kt_array(out_n);
  float* y = guarded(out_n);
  if (v->average)
    axle_f32_avgpool_scalar(p, x, want);
  else
    axle_f32_maxpool_scalar(p, x, want, NULL);
  float* tmp = kt_scratch(v->tmp_size(p) * sizeof(float));
  for (int64_t c = 0; c < p->channels; ++c) v->plane(p, x + c * in_vol, y + c * out_vol, tmp);
  char what[200];
  snprintf(what, sizeof what,
           "%s in %lldx%lld k %lldx%lld s %lldx%lld pad %lld,%lld,%lld,%lld "
           "out %lldx%lld incl %d",
           v->name, (long long)p->in[1], (long long)p->in[2], (long long)p->kernel[1],
           (long long)p->kernel[2], (long long)p->stride[1], (long long)p->stride[2],
           (long long)p->pad[1], (long long)p->pad[2], (long long)p->pad_end[1],
           (long long)p->pad_end[2], (long long)p->out[1], (long long)p->out[2],
           (int)p->count_include_pad);
  if (v->average)
    kt_close(what, y, want, out_n, 1e-6, 1e-6);
  else
    exact(what, y, want, out_n);
  check_guards(what, y, out_n);
  free(x);
  free(want);
  free_guarded(y);
  free(tmp);
  return 1;
}

static void plane_variant_all(const plane_variant_t* v) {
  if (axle_kernels_isa() < v->isa) {
    char why[96];
    snprintf(why, sizeof why, "no %s on this machine (or AXLE_KERNELS_ISA caps it)", v->name);
    kt_skip(why);
    return;
  }
  /* Widths around one and two vectors of either ISA, at either stride. */
  static const int64_t widths[] = {1, 2, 3, 5, 8, 9, 15, 16, 17, 31, 32, 33, 34, 47, 65, 112};
  static const int64_t heights[] = {1, 2, 4, 7};
  size_t ran = 0;
  for (int64_t kh = 1; kh <= 4; ++kh)
    for (int64_t kw = 1; kw <= 4; ++kw)
      for (int64_t sv = 1; sv <= 3; ++sv)
        for (int64_t sh = 1; sh <= 2; ++sh)
          for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
            const int64_t iw = widths[wi], ih = heights[(wi + (size_t)kh) % 4];
            /* Padding below the kernel, as ONNX requires, varied per case. */
            const int64_t pt = (kh + wi) % (size_t)kh, pb = wi % (size_t)kh;
            const int64_t pl = (kw + wi + 1) % (size_t)kw, pr = (wi + 2) % (size_t)kw;
            axle_f32_pool_params_t p;
            for (int ceil = 0; ceil <= 1; ++ceil) {
              make_pool(&p, 2, ih, iw, kh, kw, sv, sh, pt, pl, pb, pr, ceil);
              /* Averages: the divisor with and without the padding. */
              p.count_include_pad = v->average && (kh + kw + wi) % 2;
              if (p.out[1] > 0 && p.out[2] > 0) ran += (size_t)plane_case(v, &p);
            }
          }
  /* The ResNet stem, wider windows, and a width past the AVX2 limit. */
  axle_f32_pool_params_t p;
  make_pool(&p, 3, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 0);
  ran += (size_t)plane_case(v, &p);
  make_pool(&p, 2, 23, 41, 5, 7, 2, 2, 2, 3, 2, 3, 1);
  ran += (size_t)plane_case(v, &p);
  make_pool(&p, 1, 9, 70, 3, 17, 1, 1, 1, 8, 1, 8, 0);
  ran += (size_t)plane_case(v, &p);
  /* Padding past the kernel (the kernels allow it, ONNX does not): whole
   * windows of padding, which count no tap (average 0, max -inf). */
  make_pool(&p, 2, 5, 20, 2, 2, 1, 1, 3, 3, 0, 0, 0);
  ran += (size_t)plane_case(v, &p);
  fprintf(stderr, "\n  %s: %zu shapes\n", v->name, ran);
  CU_ASSERT(ran > 100);
}

static void test_plane_avx2(void) { plane_variant_all(&k_planes[0]); }
static void test_plane_avx512(void) { plane_variant_all(&k_planes[1]); }
static void test_avg_plane_avx2(void) { plane_variant_all(&k_planes[2]); }

/* axle_f32_maxpool (or _avgpool) under every ISA cap and thread count, on
 * shapes each plane variant takes and on ones only the reference takes. */
static void pool_dispatch(int average) {
  const axle_isa_t top = axle_kernels_isa();
  axle_f32_pool_params_t shapes[4];
  make_pool(&shapes[0], 37, 19, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1);
  make_pool(&shapes[1], 5, 13, 30, 2, 3, 1, 1, 0, 1, 1, 1, 0);
  make_pool(&shapes[2], 4, 12, 40, 3, 3, 3, 2, 1, 1, 1, 1, 0); /* vertical stride 3 */
  make_pool(&shapes[3], 3, 11, 14, 3, 3, 2, 3, 0, 0, 0, 0, 0); /* horizontal stride 3 */
  for (int isa = AXLE_ISA_SCALAR; isa <= (int)top; ++isa) {
    axle_kernels_set_isa((axle_isa_t)isa);
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        const axle_f32_pool_params_t* p = &shapes[i];
        const size_t in_n = (size_t)(p->channels * p->in[1] * p->in[2]);
        const size_t out_n = (size_t)(p->channels * p->out[1] * p->out[2]);
        float* x = average ? kt_array(in_n) : pool_input(in_n);
        float* want = kt_array(out_n);
        float* y = guarded(out_n);
        uint32_t tstore;
        axle_parallel_t par;
        const axle_parallel_t* pp = kt_parallel(&tstore, &par, threads);
        void* scratch;
        char what[96];
        snprintf(what, sizeof what, "%s shape %zu threads %u isa %d",
                 average ? "avgpool" : "maxpool", i, threads, isa);
        if (average) {
          axle_f32_pool_params_t q = *p;
          q.count_include_pad = (int32_t)(i % 2);
          axle_f32_avgpool_scalar(&q, x, want);
          scratch = kt_scratch(axle_f32_avgpool_scratch_size(&q, threads));
          axle_f32_avgpool(&q, x, y, scratch, pp);
          kt_close(what, y, want, out_n, 1e-6, 1e-6);
        } else {
          axle_f32_maxpool_scalar(p, x, want, NULL);
          scratch = kt_scratch(axle_f32_maxpool_scratch_size(p, threads));
          axle_f32_maxpool(p, x, y, scratch, pp);
          exact(what, y, want, out_n);
        }
        check_guards(what, y, out_n);
        free(x);
        free(want);
        free_guarded(y);
        free(scratch);
      }
    }
  }
  axle_kernels_set_isa(top);
}

static void test_maxpool_dispatch(void) { pool_dispatch(0); }
static void test_avgpool_dispatch(void) { pool_dispatch(1); }

/* ------------------------------------------------------------------------ */
/* Global pooling                                                            */
/* ------------------------------------------------------------------------ */

typedef void (*global_fn)(size_t, size_t, const float*, float*);

typedef struct global_variant_t {
  const char* name;
  axle_isa_t isa;
  global_fn avg, max;
} global_variant_t;

/* The dispatching entry points, serially and on 3 real threads (each
 * thread a run of channels: the bits of the serial call). */
static void avg_serial(size_t c, size_t n, const float* x, float* y) {
  axle_f32_global_avgpool(c, n, x, y, NULL);
}
static void max_serial(size_t c, size_t n, const float* x, float* y) {
  axle_f32_global_maxpool(c, n, x, y, NULL);
}
static void avg_threads(size_t c, size_t n, const float* x, float* y) {
  uint32_t storage;
  axle_parallel_t par;
  axle_f32_global_avgpool(c, n, x, y, kt_parallel(&storage, &par, 3));
}
static void max_threads(size_t c, size_t n, const float* x, float* y) {
  uint32_t storage;
  axle_parallel_t par;
  axle_f32_global_maxpool(c, n, x, y, kt_parallel(&storage, &par, 3));
}

static const global_variant_t k_globals[] = {
    {"avx2", AXLE_ISA_AVX2_FMA, axle_f32_global_avgpool__avx2, axle_f32_global_maxpool__avx2},
    /* Under whatever ISA the machine has. */
    {"dispatch", AXLE_ISA_SCALAR, avg_serial, max_serial},
    {"dispatch on 3 threads", AXLE_ISA_SCALAR, avg_threads, max_threads},
};

/* Row lengths around every vector and unroll width, 7x7 and large maps. */
static const size_t k_sizes[] = {0,  1,  2,  3,  4,  5,  7,  8,  9,   15,  16,   17,   24,
                                 31, 32, 33, 47, 48, 49, 63, 64, 65, 100, 1000, 3136, 12545};

/* avg / max of `channels` rows of `size` from make(...) against the
 * reference: the average within one float ulp of it (the sums are double
 * in both, only their order differs), the max exactly. */
static void global_case(const global_variant_t* v, size_t channels, size_t size, int offset) {
  const size_t n = channels * size;
  float* x = pool_input(n);
  /* An offset mean: a float running sum would lose the small parts. */
  if (offset)
    for (size_t i = 0; i < n; ++i) x[i] = isnan(x[i]) || isinf(x[i]) ? 1000.0f : 1000.0f + x[i];
  /* An all-NaN row and an all--inf row: the max is -inf either way. */
  if (channels > 2 && size) {
    for (size_t i = 0; i < size; ++i) {
      x[size + i] = NAN;
      x[2 * size + i] = -INFINITY;
    }
  }
  float* want = kt_array(channels);
  float* y = guarded(channels);
  char what[128];
  snprintf(what, sizeof what, "global max %s channels %zu size %zu", v->name, channels, size);
  axle_f32_global_maxpool_scalar(channels, size, x, want);
  v->max(channels, size, x, y);
  exact(what, y, want, channels);
  check_guards(what, y, channels);
  /* The average of rows without NaN / inf only: those propagate alike, but
   * kt_close reads inf - inf as an error. */
  for (size_t i = 0; i < n; ++i)
    if (isnan(x[i]) || isinf(x[i])) x[i] = 0.25f;
  snprintf(what, sizeof what, "global avg %s channels %zu size %zu offset %d", v->name, channels,
           size, offset);
  axle_f32_global_avgpool_scalar(channels, size, x, want);
  v->avg(channels, size, x, y);
  kt_close(what, y, want, channels, 1.2e-7, 1e-30);
  check_guards(what, y, channels);
  free(x);
  free(want);
  free_guarded(y);
}

static void global_variant_all(const global_variant_t* v) {
  if (axle_kernels_isa() < v->isa) {
    char why[96];
    snprintf(why, sizeof why, "no %s on this machine (or AXLE_KERNELS_ISA caps it)", v->name);
    kt_skip(why);
    return;
  }
  static const size_t channels[] = {1, 3, 4, 8, 17};
  for (size_t ci = 0; ci < sizeof channels / sizeof channels[0]; ++ci)
    for (size_t si = 0; si < sizeof k_sizes / sizeof k_sizes[0]; ++si)
      for (int offset = 0; offset <= 1; ++offset) global_case(v, channels[ci], k_sizes[si], offset);
}

static void test_global_avx2(void) { global_variant_all(&k_globals[0]); }

static void test_global_dispatch(void) {
  const axle_isa_t top = axle_kernels_isa();
  for (int isa = AXLE_ISA_SCALAR; isa <= (int)top; ++isa) {
    axle_kernels_set_isa((axle_isa_t)isa);
    global_case(&k_globals[1], 2048, 49, 0);
    global_case(&k_globals[1], 5, 33, 1);
    /* Split over threads (2048 x 49, 17 x 3136) and too small to split. */
    global_case(&k_globals[2], 2048, 49, 0);
    global_case(&k_globals[2], 17, 3136, 1);
    global_case(&k_globals[2], 5, 33, 1);
  }
  axle_kernels_set_isa(top);
}

int main(void) {
  static const kt_entry_t maxpool[] = {
      {"plane avx2 = scalar", test_plane_avx2},
      {"plane avx512 = scalar", test_plane_avx512},
      {"dispatch, every ISA and thread count", test_maxpool_dispatch},
      {"average plane avx2 = scalar", test_avg_plane_avx2},
      {"average dispatch, every ISA and thread count", test_avgpool_dispatch},
  };
  static const kt_entry_t global[] = {
      {"global avx2 = scalar", test_global_avx2},
      {"dispatch, every ISA, serial and on threads", test_global_dispatch},
  };
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (KT_ADD_SUITE("f32 max and average pooling", maxpool) ||
      KT_ADD_SUITE("f32 global pooling", global)) {
    CU_cleanup_registry();
    return 1;
  }
  return kt_run_all();
}
