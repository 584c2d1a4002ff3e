/* axle run: one inference on input files; prints (and optionally saves) the
 * outputs, the placement, and a trace. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Outputs with at most this many elements are printed in full. */
#define SMALL_OUTPUT 64
#define TOP_K 5

void cmd_run_usage(FILE* f) {
  fprintf(f,
          "usage: axle run MODEL [options]\n"
          "\n"
          "Runs MODEL once and prints each output: name, dtype, shape, and its values when\n"
          "it is small (a summary otherwise). For a classifier-like output (one row of 2..1000\n"
          "float scores) it also prints the top %d as \"class index: score\"; scores that do\n"
          "not already sum to 1 are softmaxed first, and the tool says which.\n"
          "\n"
          "inputs:\n"
          "  -i, --input [NAME=]FILE   value of model input NAME from FILE (.npy, .pgm, .ppm);\n"
          "                            NAME= may be left out for the one input not otherwise\n"
          "                            given. Arrays are cast to the input's dtype (and\n"
          "                            reshaped when the element count matches).\n"
          "      --calibrate PATH      sample inputs for 8-bit devices (k210, drpai): a folder of\n"
          "                            .npy/.pgm/.ppm files or one .npy of stacked samples; the\n"
          "                            float model runs on the CPU over them to fix quantization\n"
          "  -c, --const [NAME=]FILE   like --input, but freezes the input as a constant of the\n"
          "                            session (shape tensors: lets placement fold them)\n"
          "  --scale S                 image pixel (0..255) -> float input factor; a number or a\n"
          "                            fraction (default 1/255, giving [0,1]). Integer inputs\n"
          "                            take raw pixels (or quantize pixel*S when the input has\n"
          "                            quantization parameters)\n"
          "  --invert                  use 255 - pixel (for black-on-white images)\n"
          "\n"
          "placement and execution:\n"
          "  -d, --device D            preferred device (repeat in order of preference; default\n"
          "                            cpu). Unsupported nodes fall back to the CPU plugin\n"
          "  --strict                  no CPU fallback: fail if a node cannot go to the devices\n"
          "  -t, --threads N           threads for plugins that use them (0 = plugin default)\n"
          "  --timeout MS              fail the run with 'timeout' after MS milliseconds\n"
          "  --plugin PATH             also load the plugin shared library at PATH\n"
          "\n"
          "reports:\n"
          "  --explain                 print the placement report, planned peak memory and the\n"
          "                            run time\n"
          "  --trace FILE              profile the run and write Chrome trace JSON to FILE\n"
          "                            (open it in https://ui.perfetto.dev)\n"
          "  -o, --save-outputs DIR    write DIR/<output>.npy for each output (names made\n"
          "                            file-safe) and DIR/outputs.txt: \"name<TAB>file\" lines\n"
          "  -h, --help                show this help\n"
          "\n"
          "examples:\n"
          "  axle run examples/digits/digits.onnx --input examples/digits/samples/3_561.pgm\n"
          "  axle run model.onnx -i x=in.npy -c shape=shape.npy --device k210 --explain\n",
          TOP_K);
}

/* ------------------------------------------------------------------------ */
/* Printing outputs                                                          */
/* ------------------------------------------------------------------------ */

static void print_value(const void* data, axle_dtype_t dtype, size_t i) {
  /* 64-bit integers are read directly: a double would round values above 2^53. */
  if (dtype == AXLE_DTYPE_I64) {
    int64_t v;
    memcpy(&v, (const char*)data + i * sizeof v, sizeof v);
    printf("%lld", (long long)v);
    return;
  }
  if (dtype == AXLE_DTYPE_U64) {
    uint64_t v;
    memcpy(&v, (const char*)data + i * sizeof v, sizeof v);
    printf("%llu", (unsigned long long)v);
    return;
  }
  double v = tio_get(data, dtype, i);
  if (tio_dtype_is_float(dtype))
    printf("%.6g", v);
  else if (dtype == AXLE_DTYPE_BOOL)
    printf("%s", v != 0.0 ? "true" : "false");
  else
    printf("%lld", (long long)v);
}

/* One row of scores: float, 2..1000 elements, every dim but the last 1. */
static int is_classifier_like(axle_tensor_t* t) {
  axle_dtype_t dt = axle_tensor_dtype(t);
  if (!tio_dtype_is_float(dt)) return 0;
  uint32_t rank = axle_tensor_rank(t);
  const int64_t* shape = axle_tensor_shape(t);
  if (rank == 0) return 0;
  for (uint32_t i = 0; i + 1 < rank; i++)
    if (shape[i] != 1) return 0;
  return shape[rank - 1] >= 2 && shape[rank - 1] <= 1000;
}

static void print_top_k(axle_tensor_t* t) {
  axle_dtype_t dt = axle_tensor_dtype(t);
  const void* data = axle_tensor_data(t);
  size_t n = (size_t)axle_tensor_element_count(t);
  double* p = malloc(n * sizeof *p);
  if (!p) return;
  double sum = 0.0, max = -INFINITY;
  int in_unit = 1, finite = 1;
  for (size_t i = 0; i < n; i++) {
    p[i] = tio_get(data, dt, i);
    if (!isfinite(p[i])) finite = 0;
    if (p[i] < 0.0 || p[i] > 1.0) in_unit = 0;
    sum += p[i];
    if (p[i] > max) max = p[i];
  }
  if (!finite) {
    printf("  top-%d: not shown (non-finite scores)\n", TOP_K);
    free(p);
    return;
  }
  /* Tolerance covers float32 rounding of a softmax over up to 1000 classes. */
  int probabilities = in_unit && fabs(sum - 1.0) <= 1e-3;
  if (!probabilities) {
    double z = 0.0;
    for (size_t i = 0; i < n; i++) z += exp(p[i] - max);
    for (size_t i = 0; i < n; i++) p[i] = exp(p[i] - max) / z;
  }
  int k = n < TOP_K ? (int)n : TOP_K;
  printf("  top-%d (%s):\n", k,
         probabilities ? "scores as given: they already sum to 1"
                       : "softmax of the scores: they do not sum to 1");
  /* Selection by repeated max: k is tiny, and ties keep the lower index. */
  unsigned char* used = calloc(n, 1);
  if (!used) {
    free(p);
    return;
  }
  for (int r = 0; r < k; r++) {
    size_t best = n;
    for (size_t i = 0; i < n; i++)
      if (!used[i] && (best == n || p[i] > p[best])) best = i;
    used[best] = 1;
    printf("    %zu: %.6f\n", best, p[best]);
  }
  free(used);
  free(p);
}

static void print_output(const char* name, axle_tensor_t* t) {
  axle_dtype_t dt = axle_tensor_dtype(t);
  uint32_t rank = axle_tensor_rank(t);
  const int64_t* shape = axle_tensor_shape(t);
  char sh[256];
  tio_format_shape(sh, sizeof sh, rank, shape);
  printf("%s: %s %s\n", name, axle_dtype_name(dt), sh);
  if (!tio_dtype_is_numeric(dt)) {
    printf("  (%s values are not printed)\n", axle_dtype_name(dt));
    return;
  }
  size_t n = (size_t)axle_tensor_element_count(t);
  const void* data = axle_tensor_data(t);
  if (n && !data) {
    printf("  (data not accessible on the host)\n");
    return;
  }
  if (n <= SMALL_OUTPUT) {
    /* One line per innermost row keeps matrices readable. */
    size_t row = rank ? (size_t)shape[rank - 1] : 1;
    if (row == 0) row = 1;
    for (size_t i = 0; i < n; i++) {
      printf("%s", i % row == 0 ? "  " : " ");
      print_value(data, dt, i);
      if (i % row == row - 1 || i + 1 == n) printf("\n");
    }
    if (n == 0) printf("  (empty)\n");
  } else {
    double mn = INFINITY, mx = -INFINITY, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
      double v = tio_get(data, dt, i);
      if (v < mn) mn = v;
      if (v > mx) mx = v;
      sum += v;
    }
    printf("  %zu elements: min %.6g max %.6g mean %.6g\n  first:", n, mn, mx, sum / (double)n);
    for (size_t i = 0; i < 8; i++) {
      printf(" ");
      print_value(data, dt, i);
    }
    printf(" ...\n");
  }
  if (is_classifier_like(t)) print_top_k(t);
}

/* ------------------------------------------------------------------------ */
/* --save-outputs                                                            */
/* ------------------------------------------------------------------------ */

static int make_dirs(const char* dir) {
  char path[4096];
  size_t len = strlen(dir);
  if (len == 0 || len >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(path, dir, len + 1);
  for (char* p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

/* Output names are arbitrary ONNX strings ("logits:0", "a/b"): keep
 * [A-Za-z0-9._-], replace the rest, and never start with '.' so that no name
 * can become hidden, "." or "..". */
static void sanitize(const char* name, char* out, size_t size) {
  size_t n = 0;
  for (const char* s = name; *s && n + 1 < size && n < 120; s++) {
    char c = *s;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || (c == '.' && n > 0);
    out[n++] = ok ? c : '_';
  }
  if (n == 0 && size > 6) n = (size_t)snprintf(out, size, "output");
  out[n] = '\0';
}

static void write_escaped(FILE* f, const char* s) {
  for (; *s; s++) {
    if (*s == '\t') fputs("\\t", f);
    else if (*s == '\n') fputs("\\n", f);
    else if (*s == '\\') fputs("\\\\", f);
    else fputc(*s, f);
  }
}

static int save_outputs(const char* dir, uint32_t count, const char* const* names,
                        axle_tensor_t* const* outputs) {
  if (make_dirs(dir) != 0) return cli_fail("%s: %s", dir, strerror(errno));
  char(*files)[160] = calloc(count ? count : 1, sizeof *files);
  if (!files) return cli_fail("out of memory");
  int rc = CLI_OK;
  char map_path[4200];
  snprintf(map_path, sizeof map_path, "%s/outputs.txt", dir);
  FILE* map = fopen(map_path, "w");
  if (!map) {
    free(files);
    return cli_fail("%s: %s", map_path, strerror(errno));
  }
  for (uint32_t i = 0; i < count; i++) {
    char base[128];
    sanitize(names[i], base, sizeof base);
    /* Distinct names can sanitize alike ("a/b", "a:b"): number the repeats. */
    snprintf(files[i], sizeof files[i], "%s.npy", base);
    for (uint32_t suffix = 2;; suffix++) {
      uint32_t j = 0;
      while (j < i && strcmp(files[j], files[i]) != 0) j++;
      if (j == i) break;
      snprintf(files[i], sizeof files[i], "%s_%u.npy", base, suffix);
    }
    char path[4400], err[TIO_ERR_SIZE];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    if (tio_write_npy(path, outputs[i], err, sizeof err)) {
      rc = cli_fail("%s", err);
      continue;
    }
    write_escaped(map, names[i]);
    fprintf(map, "\t%s\n", files[i]);
  }
  if (fclose(map) != 0) rc = cli_fail("%s: %s", map_path, strerror(errno));
  free(files);
  return rc;
}

/* ------------------------------------------------------------------------ */

typedef struct run_args_t {
  const char* model;
  cli_strv_t devices, inputs, consts, plugins;
  uint32_t threads, timeout_ms;
  int strict, explain;
  const char* trace;
  const char* save_dir;
  const char* calibrate;
  tio_image_options_t img;
} run_args_t;

static void run_args_free(run_args_t* a) {
  cli_strv_free(&a->devices);
  cli_strv_free(&a->inputs);
  cli_strv_free(&a->consts);
  cli_strv_free(&a->plugins);
}

enum {
  OPT_STRICT = 256,
  OPT_EXPLAIN,
  OPT_TRACE,
  OPT_SCALE,
  OPT_INVERT,
  OPT_PLUGIN,
  OPT_TIMEOUT,
  OPT_CALIBRATE
};

static int parse_args(int argc, char** argv, run_args_t* a) {
  static const struct option opts[] = {
      {"device", required_argument, NULL, 'd'},
      {"input", required_argument, NULL, 'i'},
      {"const", required_argument, NULL, 'c'},
      {"threads", required_argument, NULL, 't'},
      {"save-outputs", required_argument, NULL, 'o'},
      {"strict", no_argument, NULL, OPT_STRICT},
      {"explain", no_argument, NULL, OPT_EXPLAIN},
      {"trace", required_argument, NULL, OPT_TRACE},
      {"scale", required_argument, NULL, OPT_SCALE},
      {"invert", no_argument, NULL, OPT_INVERT},
      {"plugin", required_argument, NULL, OPT_PLUGIN},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"calibrate", required_argument, NULL, OPT_CALIBRATE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int opt;
  opterr = 0;
  optind = 0;
  while ((opt = getopt_long(argc, argv, ":d:i:c:t:o:h", opts, NULL)) != -1) {
    int oom = 0;
    switch (opt) {
      case 'd': oom = cli_strv_push(&a->devices, optarg); break;
      case 'i': oom = cli_strv_push(&a->inputs, optarg); break;
      case 'c': oom = cli_strv_push(&a->consts, optarg); break;
      case OPT_PLUGIN: oom = cli_strv_push(&a->plugins, optarg); break;
      case 't':
        if (cli_parse_u32(optarg, &a->threads))
          return cli_usage_error("run", "--threads wants a count, not '%s'", optarg);
        break;
      case OPT_TIMEOUT:
        if (cli_parse_u32(optarg, &a->timeout_ms))
          return cli_usage_error("run", "--timeout wants milliseconds, not '%s'", optarg);
        break;
      case 'o': a->save_dir = optarg; break;
      case OPT_STRICT: a->strict = 1; break;
      case OPT_EXPLAIN: a->explain = 1; break;
      case OPT_TRACE: a->trace = optarg; break;
      case OPT_SCALE:
        if (cli_parse_scale(optarg, &a->img.scale))
          return cli_usage_error("run", "--scale wants a number or a fraction, not '%s'", optarg);
        break;
      case OPT_INVERT: a->img.invert = 1; break;
      case OPT_CALIBRATE: a->calibrate = optarg; break;
      case 'h': cmd_run_usage(stdout); return -1;
      default: return cli_getopt_error("run", opt, argv);
    }
    if (oom) return cli_fail("out of memory");
  }
  if (optind >= argc) return cli_usage_error("run", "missing MODEL");
  if (optind + 1 < argc) return cli_usage_error("run", "unexpected argument '%s'", argv[optind + 1]);
  a->model = argv[optind];
  return CLI_OK;
}

int cmd_run(int argc, char** argv) {
  run_args_t a = {.img = TIO_IMAGE_OPTIONS_DEFAULT};
  int rc = parse_args(argc, argv, &a);
  if (rc != CLI_OK) {
    run_args_free(&a);
    return rc < 0 ? CLI_OK : rc;
  }

  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* sess = NULL;
  cli_feeds_t inputs = {0}, consts = {0}, calib = {0};
  cli_io_t io = {0};
  axle_tensor_info_t* shapes = NULL;
  uint32_t shape_count = 0, out_count = 0;
  axle_tensor_t** outputs = NULL;
  const char** out_names = NULL;
  axle_status_t st;

  if ((rc = cli_runtime_create(&a.plugins, &rt)) != CLI_OK) goto done;
  if ((st = axle_model_load_file(a.model, &model)) != AXLE_OK) {
    rc = cli_fail_status(st);
    goto done;
  }
  if ((rc = cli_io_from_model(model, &io)) != CLI_OK) goto done;
  axle_session_options_t so = {
      .struct_size = sizeof so,
      .flags = (a.strict ? AXLE_SESSION_STRICT : 0u) | (a.trace ? AXLE_SESSION_PROFILE : 0u),
      .devices = a.devices.n ? a.devices.v : NULL,
      .device_count = a.devices.n,
      .threads = a.threads,
  };
  /* A native artifact (.kmodel, ...) has no inputs until a device loaded
   * it: place it first, then match the files against the session. */
  if (io.count == 0) {
    if ((st = axle_session_create(rt, model, &so, &sess)) != AXLE_OK) {
      rc = cli_fail_status(st);
      cli_print_diagnostics(rt);
      goto done;
    }
    if ((rc = cli_io_from_session(sess, &io)) != CLI_OK) goto done;
  }
  rc = cli_load_feeds("run", &io, &a.inputs, &a.consts, &a.img, &inputs, &consts);
  if (rc != CLI_OK) goto done;

  /* Every input must have a value; say which are missing before the
   * session is built, with the shapes they need. */
  for (uint32_t i = 0; i < io.count; i++) {
    const axle_tensor_info_t* info = &io.info[i];
    int given = 0;
    for (uint32_t j = 0; j < inputs.count; j++) given |= strcmp(inputs.names[j], info->name) == 0;
    for (uint32_t j = 0; j < consts.count; j++) given |= strcmp(consts.names[j], info->name) == 0;
    if (!given) {
      char sh[256];
      tio_format_shape(sh, sizeof sh, info->rank, info->shape);
      rc = cli_fail("invalid argument: no value for input '%s' (%s %s): add --input %s%sFILE",
                    info->name, axle_dtype_name(info->dtype), sh, io.count > 1 ? info->name : "",
                    io.count > 1 ? "=" : "");
      goto done;
    }
  }

  if (!sess) {
    if ((rc = cli_feed_shapes(&io, &inputs, &shapes, &shape_count)) != CLI_OK) goto done;
    if (a.calibrate && (rc = cli_load_calibration(&io, a.calibrate, &a.img, &calib)) != CLI_OK)
      goto done;
    so.constant_input_count = consts.count;
    so.constant_input_names = consts.names;
    so.constant_inputs = consts.tensors;
    so.input_shape_count = shape_count;
    so.input_shapes = shapes;
    so.calibration_count = calib.count;
    so.calibration_inputs = calib.tensors;
    st = axle_session_create(rt, model, &so, &sess);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      /* A device that is "not found" may be one whose plugin was refused. */
      cli_print_diagnostics(rt);
      goto done;
    }
  } else if (a.calibrate || consts.count) {
    rc = cli_usage_error("run", "%s is a native artifact: --calibrate and --const apply to ONNX models",
                         a.model);
    goto done;
  }
  if (a.explain) {
    cli_print_diagnostics(rt);
    char* report = NULL;
    st = axle_session_placement_report(sess, AXLE_REPORT_TEXT, &report);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    printf("placement:\n%s", report ? report : "");
    if (report && *report && report[strlen(report) - 1] != '\n') printf("\n");
    axle_free(report);
    axle_session_stats_t stats = {.struct_size = sizeof stats};
    if ((st = axle_session_stats(sess, &stats)) != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    char peak[32], unplanned[32];
    cli_format_bytes(peak, sizeof peak, stats.planned_peak_bytes);
    cli_format_bytes(unplanned, sizeof unplanned, stats.unplanned_bytes);
    printf("memory: planned peak %s (%llu bytes; %s without reuse), %u partition%s, %u nodes\n",
           peak, (unsigned long long)stats.planned_peak_bytes, unplanned, stats.partition_count,
           stats.partition_count == 1 ? "" : "s", stats.node_count);
  }

  out_count = axle_session_output_count(sess);
  outputs = calloc(out_count ? out_count : 1, sizeof *outputs);
  out_names = calloc(out_count ? out_count : 1, sizeof *out_names);
  if (!outputs || !out_names) {
    rc = cli_fail("out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < out_count; i++) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    if ((st = axle_session_output_info(sess, i, &info)) != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    out_names[i] = info.name ? info.name : "?";
  }

  axle_run_options_t ro = {.struct_size = sizeof ro, .timeout_ms = a.timeout_ms};
  double t0 = cli_now_ms();
  st = axle_session_run(sess, &ro, inputs.names, inputs.tensors, inputs.count, NULL, outputs,
                        out_count);
  double elapsed = cli_now_ms() - t0;
  if (st != AXLE_OK) {
    rc = cli_fail_status(st);
    goto done;
  }
  if (a.explain) printf("run: %.3f ms\n\n", elapsed);

  for (uint32_t i = 0; i < out_count; i++) print_output(out_names[i], outputs[i]);
  fflush(stdout);

  if (a.save_dir && (rc = save_outputs(a.save_dir, out_count, out_names, outputs)) != CLI_OK)
    goto done;
  if (a.trace) {
    if ((st = axle_session_trace_write(sess, a.trace)) != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    fprintf(stderr, "axle: trace written to %s (open it in https://ui.perfetto.dev)\n", a.trace);
  }
  rc = CLI_OK;

done:
  for (uint32_t i = 0; outputs && i < out_count; i++) axle_tensor_release(outputs[i]);
  free(outputs);
  free(out_names);
  free(shapes);
  axle_session_release(sess);
  cli_feeds_free(&inputs);
  cli_feeds_free(&consts);
  cli_feeds_free(&calib);
  cli_io_free(&io);
  axle_model_release(model);
  axle_runtime_release(rt);
  run_args_free(&a);
  return rc;
}
