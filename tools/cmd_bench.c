/* axle bench: latency of repeated synchronous runs. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_RUNS 100
#define DEFAULT_WARMUP 10

void cmd_bench_usage(FILE* f) {
  fprintf(f,
          "usage: axle bench MODEL [options]\n"
          "\n"
          "Runs MODEL repeatedly on one set of inputs and prints the latency of a run (median,\n"
          "p10, p90, min, in milliseconds) and the throughput in runs/s. Inputs not given are\n"
          "random: floats uniform in [0,1), 8-bit integers uniform over their range, bools\n"
          "random, wider integers zero (they are usually indices or shapes). Symbolic\n"
          "dimensions of such inputs are 1. A progress bar is drawn on stderr when it is a\n"
          "terminal.\n"
          "\n"
          "options:\n"
          "  -d, --device D            preferred device (repeat in order of preference;\n"
          "                            default cpu)\n"
          "  --strict                  no CPU fallback\n"
          "  -t, --threads N           threads for plugins that use them (0 = plugin default)\n"
          "  -n, --runs N              timed runs (default %d)\n"
          "  -w, --warmup N            untimed runs first (default %d)\n"
          "  -i, --input [NAME=]FILE   input values from FILE (.npy, .pgm, .ppm) as in 'axle run'\n"
          "  -c, --const [NAME=]FILE   freeze an input as a session constant\n"
          "  --scale S, --invert       image conversion as in 'axle run'\n"
          "  --seed N                  seed of the random inputs (default 1)\n"
          "  --plugin PATH             also load the plugin shared library at PATH\n"
          "  -h, --help                show this help\n"
          "\n"
          "example:\n"
          "  axle bench examples/digits/digits.onnx --runs 1000 --threads 1\n",
          DEFAULT_RUNS, DEFAULT_WARMUP);
}

/* xorshift64*: a fixed, platform-independent stream so that two machines
 * benchmark the same input values for a given seed. */
static uint64_t rng_next(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static int random_tensor(const axle_tensor_info_t* info, uint64_t* seed, axle_tensor_t** out) {
  int64_t shape[AXLE_MAX_RANK];
  for (uint32_t d = 0; d < info->rank; d++) shape[d] = info->shape[d] < 0 ? 1 : info->shape[d];
  axle_status_t st = axle_tensor_create(info->dtype, info->rank, shape, out);
  if (st != AXLE_OK)
    return cli_fail("%s: random value for input '%s': %s", axle_status_string(st), info->name,
                    axle_status_message());
  void* data = axle_tensor_data(*out);
  size_t n = (size_t)axle_tensor_element_count(*out);
  for (size_t i = 0; i < n; i++) {
    double u = (double)(rng_next(seed) >> 11) / 9007199254740992.0; /* [0,1) */
    double v;
    switch (info->dtype) {
      case AXLE_DTYPE_U8: v = floor(u * 256.0); break;
      case AXLE_DTYPE_I8: v = floor(u * 256.0) - 128.0; break;
      case AXLE_DTYPE_BOOL: v = u < 0.5; break;
      default: v = tio_dtype_is_float(info->dtype) ? u : 0.0; break;
    }
    tio_set(data, info->dtype, i, v);
  }
  return CLI_OK;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between closest ranks (NumPy's default). */
static double percentile(const double* sorted, uint32_t n, double q) {
  double pos = q * (double)(n - 1);
  uint32_t lo = (uint32_t)pos;
  if (lo + 1 >= n) return sorted[n - 1];
  double frac = pos - lo;
  return sorted[lo] * (1.0 - frac) + sorted[lo + 1] * frac;
}

typedef struct progress_t {
  int enabled;
  double last_ms;
} progress_t;

static void progress_draw(progress_t* p, const char* phase, uint32_t done, uint32_t total) {
  if (!p->enabled) return;
  double now = cli_now_ms();
  /* Redraw at most ~20 times a second: a fast model would otherwise spend
   * its time in terminal writes. */
  if (done != total && now - p->last_ms < 50.0) return;
  p->last_ms = now;
  enum { WIDTH = 30 };
  int fill = total ? (int)((uint64_t)done * WIDTH / total) : WIDTH;
  char bar[WIDTH + 1];
  for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  fprintf(stderr, "\r%-6s [%s] %u/%u", phase, bar, done, total);
  fflush(stderr);
}

static void progress_end(progress_t* p) {
  if (!p->enabled) return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
}

enum { OPT_STRICT = 256, OPT_SCALE, OPT_INVERT, OPT_PLUGIN, OPT_SEED };

int cmd_bench(int argc, char** argv) {
  static const struct option opts[] = {
      {"device", required_argument, NULL, 'd'},
      {"threads", required_argument, NULL, 't'},
      {"runs", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'},
      {"input", required_argument, NULL, 'i'},
      {"const", required_argument, NULL, 'c'},
      {"strict", no_argument, NULL, OPT_STRICT},
      {"scale", required_argument, NULL, OPT_SCALE},
      {"invert", no_argument, NULL, OPT_INVERT},
      {"plugin", required_argument, NULL, OPT_PLUGIN},
      {"seed", required_argument, NULL, OPT_SEED},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  cli_strv_t devices = {0}, in_specs = {0}, const_specs = {0}, plugins = {0};
  uint32_t threads = 0, runs = DEFAULT_RUNS, warmup = DEFAULT_WARMUP, seed32 = 1;
  int strict = 0, opt, rc = CLI_OK;
  tio_image_options_t img = TIO_IMAGE_OPTIONS_DEFAULT;
  const char* model_path = NULL;

  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* sess = NULL;
  cli_feeds_t given = {0}, consts = {0};
  cli_io_t io = {0};
  axle_tensor_info_t* shapes = NULL;
  uint32_t shape_count = 0, n_in = 0, n_out = 0;
  const char** in_names = NULL;
  axle_tensor_t** in_tensors = NULL;
  axle_tensor_t** outputs = NULL;
  double* times = NULL;
  axle_status_t st;

  opterr = 0;
  optind = 0;
  while ((opt = getopt_long(argc, argv, ":d:t:n:w:i:c:h", opts, NULL)) != -1) {
    int oom = 0;
    switch (opt) {
      case 'd': oom = cli_strv_push(&devices, optarg); break;
      case 'i': oom = cli_strv_push(&in_specs, optarg); break;
      case 'c': oom = cli_strv_push(&const_specs, optarg); break;
      case OPT_PLUGIN: oom = cli_strv_push(&plugins, optarg); break;
      case 't':
        if (cli_parse_u32(optarg, &threads)) {
          rc = cli_usage_error("bench", "--threads wants a count, not '%s'", optarg);
          goto done;
        }
        break;
      case 'n':
        if (cli_parse_u32(optarg, &runs) || runs == 0) {
          rc = cli_usage_error("bench", "--runs wants a positive count, not '%s'", optarg);
          goto done;
        }
        break;
      case 'w':
        if (cli_parse_u32(optarg, &warmup)) {
          rc = cli_usage_error("bench", "--warmup wants a count, not '%s'", optarg);
          goto done;
        }
        break;
      case OPT_SEED:
        if (cli_parse_u32(optarg, &seed32)) {
          rc = cli_usage_error("bench", "--seed wants a number, not '%s'", optarg);
          goto done;
        }
        break;
      case OPT_STRICT: strict = 1; break;
      case OPT_SCALE:
        if (cli_parse_scale(optarg, &img.scale)) {
          rc = cli_usage_error("bench", "--scale wants a number or a fraction, not '%s'", optarg);
          goto done;
        }
        break;
      case OPT_INVERT: img.invert = 1; break;
      case 'h': cmd_bench_usage(stdout); goto done;
      default: rc = cli_getopt_error("bench", opt, argv); goto done;
    }
    if (oom) {
      rc = cli_fail("out of memory");
      goto done;
    }
  }
  if (optind >= argc) {
    rc = cli_usage_error("bench", "missing MODEL");
    goto done;
  }
  if (optind + 1 < argc) {
    rc = cli_usage_error("bench", "unexpected argument '%s'", argv[optind + 1]);
    goto done;
  }
  model_path = argv[optind];

  if ((rc = cli_runtime_create(&plugins, &rt)) != CLI_OK) goto done;
  if ((st = axle_model_load_file(model_path, &model)) != AXLE_OK) {
    rc = cli_fail_status(st);
    goto done;
  }
  if ((rc = cli_io_from_model(model, &io)) != CLI_OK) goto done;
  axle_session_options_t so = {
      .struct_size = sizeof so,
      .flags = strict ? AXLE_SESSION_STRICT : 0u,
      .devices = devices.n ? devices.v : NULL,
      .device_count = devices.n,
      .threads = threads,
  };
  /* Native artifacts describe their inputs only once a device loaded them. */
  if (io.count == 0) {
    if ((st = axle_session_create(rt, model, &so, &sess)) != AXLE_OK) {
      rc = cli_fail_status(st);
      cli_print_diagnostics(rt);
      goto done;
    }
    if ((rc = cli_io_from_session(sess, &io)) != CLI_OK) goto done;
  }
  if ((rc = cli_load_feeds("bench", &io, &in_specs, &const_specs, &img, &given, &consts)) != CLI_OK)
    goto done;
  if (!sess) {
    if ((rc = cli_feed_shapes(&io, &given, &shapes, &shape_count)) != CLI_OK) goto done;
    so.constant_input_count = consts.count;
    so.constant_input_names = consts.names;
    so.constant_inputs = consts.tensors;
    so.input_shape_count = shape_count;
    so.input_shapes = shapes;
    if ((st = axle_session_create(rt, model, &so, &sess)) != AXLE_OK) {
      rc = cli_fail_status(st);
      cli_print_diagnostics(rt);
      goto done;
    }
  }

  /* The session's inputs are the model's minus the constants, with concrete
   * shapes: given files fill some, random tensors the rest. */
  n_in = axle_session_input_count(sess);
  n_out = axle_session_output_count(sess);
  in_names = calloc(n_in ? n_in : 1, sizeof *in_names);
  in_tensors = calloc(n_in ? n_in : 1, sizeof *in_tensors);
  outputs = calloc(n_out ? n_out : 1, sizeof *outputs);
  times = calloc(runs, sizeof *times);
  if (!in_names || !in_tensors || !outputs || !times) {
    rc = cli_fail("out of memory");
    goto done;
  }
  uint64_t seed = 0x9E3779B97F4A7C15ULL ^ seed32;
  uint32_t random_count = 0;
  for (uint32_t i = 0; i < n_in; i++) {
    axle_tensor_info_t info = {.struct_size = sizeof info};
    if ((st = axle_session_input_info(sess, i, &info)) != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    in_names[i] = info.name;
    for (uint32_t j = 0; j < given.count && !in_tensors[i]; j++) {
      if (strcmp(given.names[j], info.name) == 0) {
        axle_tensor_retain(given.tensors[j]);
        in_tensors[i] = given.tensors[j];
      }
    }
    if (!in_tensors[i]) {
      if ((rc = random_tensor(&info, &seed, &in_tensors[i])) != CLI_OK) goto done;
      random_count++;
    }
  }

  progress_t progress = {.enabled = isatty(STDERR_FILENO), .last_ms = -1e9};
  for (uint32_t r = 0; r < warmup + runs; r++) {
    int timed = r >= warmup;
    double t0 = cli_now_ms();
    /* Outputs of the first run are reused in place afterwards, so the timed
     * runs measure inference, not output allocation. */
    st = axle_session_run(sess, NULL, in_names, in_tensors, n_in, NULL, outputs, n_out);
    double dt = cli_now_ms() - t0;
    if (st != AXLE_OK) {
      progress_end(&progress);
      rc = cli_fail_status(st);
      goto done;
    }
    if (timed) times[r - warmup] = dt;
    if (timed)
      progress_draw(&progress, "bench", r - warmup + 1, runs);
    else
      progress_draw(&progress, "warmup", r + 1, warmup);
  }
  progress_end(&progress);

  double total = 0.0;
  for (uint32_t i = 0; i < runs; i++) total += times[i];
  qsort(times, runs, sizeof *times, cmp_double);

  printf("model: %s\n", model_path);
  printf("devices:");
  if (devices.n == 0) printf(" cpu");
  for (uint32_t i = 0; i < devices.n; i++) printf(" %s", devices.v[i]);
  printf("%s", strict ? " (strict)" : "");
  if (threads)
    printf("  threads: %u\n", threads);
  else
    printf("  threads: plugin default\n");
  printf("inputs: %u given, %u random (seed %u)\n", n_in - random_count, random_count, seed32);
  printf("runs: %u timed after %u warmup\n", runs, warmup);
  printf("latency ms: median %.4f  p10 %.4f  p90 %.4f  min %.4f  max %.4f\n",
         percentile(times, runs, 0.5), percentile(times, runs, 0.1), percentile(times, runs, 0.9),
         times[0], times[runs - 1]);
  /* Throughput comes from the mean, so a few slow runs show here and not in
   * the median: print the mean beside it. */
  printf("throughput: %.1f runs/s (mean latency %.4f ms)\n",
         total > 0.0 ? runs * 1000.0 / total : INFINITY, total / runs);
  rc = CLI_OK;

done:
  for (uint32_t i = 0; outputs && i < n_out; i++) axle_tensor_release(outputs[i]);
  for (uint32_t i = 0; in_tensors && i < n_in; i++) axle_tensor_release(in_tensors[i]);
  free(outputs);
  free(in_tensors);
  free(in_names);
  free(times);
  free(shapes);
  axle_session_release(sess);
  cli_feeds_free(&given);
  cli_feeds_free(&consts);
  cli_io_free(&io);
  axle_model_release(model);
  axle_runtime_release(rt);
  cli_strv_free(&devices);
  cli_strv_free(&in_specs);
  cli_strv_free(&const_specs);
  cli_strv_free(&plugins);
  return rc;
}
