/* Shared helpers of the axle tool. See cli.h. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_fail_status(axle_status_t status) {
  const char* msg = axle_status_message();
  if (msg && *msg)
    fprintf(stderr, "axle: %s: %s\n", axle_status_string(status), msg);
  else
    fprintf(stderr, "axle: %s\n", axle_status_string(status));
  return CLI_FAIL;
}

int cli_fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("axle: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CLI_FAIL;
}

int cli_usage_error(const char* cmd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "axle %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'axle %s --help'.\n", cmd);
  va_end(ap);
  return CLI_USAGE;
}

int cli_getopt_error(const char* cmd, int opt, char** argv) {
  extern int optind, optopt;
  const char* arg = argv[optind - 1];
  if (opt == ':') return cli_usage_error(cmd, "option '%s' needs a value", arg);
  if (optopt) return cli_usage_error(cmd, "unknown option '-%c'", optopt);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_strv_push(cli_strv_t* list, const char* s) {
  if (list->n == list->cap) {
    uint32_t cap = list->cap ? list->cap * 2 : 8;
    const char** v = realloc(list->v, cap * sizeof *v);
    if (!v) return -1;
    list->v = v;
    list->cap = cap;
  }
  list->v[list->n++] = s;
  return 0;
}

void cli_strv_free(cli_strv_t* list) {
  free(list->v);
  memset(list, 0, sizeof *list);
}

int cli_parse_u32(const char* s, uint32_t* out) {
  char* end;
  errno = 0;
  if (!s || !*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_double(const char* s, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_scale(const char* s, double* out) {
  const char* slash = strchr(s, '/');
  if (!slash) return parse_double(s, out);
  char num[64];
  size_t n = (size_t)(slash - s);
  if (n == 0 || n >= sizeof num) return -1;
  memcpy(num, s, n);
  num[n] = '\0';
  double a, b;
  if (parse_double(num, &a) || parse_double(slash + 1, &b) || b == 0.0) return -1;
  *out = a / b;
  return 0;
}

void cli_format_bytes(char* buf, size_t size, uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%llu B", (unsigned long long)bytes);
  else
    snprintf(buf, size, "%.*f %s", v < 10 ? 2 : 1, v, units[u]);
}

double cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cli_runtime_create(const cli_strv_t* plugins, axle_runtime_t** out) {
  *out = NULL;
  axle_runtime_t* rt;
  axle_status_t st = axle_runtime_create(NULL, &rt);
  if (st != AXLE_OK) return cli_fail_status(st);
  for (uint32_t i = 0; plugins && i < plugins->n; i++) {
    st = axle_runtime_load_plugin(rt, plugins->v[i]);
    if (st != AXLE_OK) {
      axle_runtime_release(rt);
      return cli_fail_status(st);
    }
  }
  *out = rt;
  return CLI_OK;
}

void cli_print_diagnostics(const axle_runtime_t* runtime) {
  uint32_t n = axle_runtime_diagnostic_count(runtime);
  for (uint32_t i = 0; i < n; i++)
    fprintf(stderr, "axle: plugin refused: %s\n", axle_runtime_diagnostic(runtime, i));
}

/* ------------------------------------------------------------------------ */
/* --input / --const                                                         */
/* ------------------------------------------------------------------------ */

void cli_feeds_free(cli_feeds_t* feeds) {
  if (!feeds) return;
  for (uint32_t i = 0; i < feeds->count; i++) axle_tensor_release(feeds->tensors[i]);
  free(feeds->names);
  free(feeds->tensors);
  memset(feeds, 0, sizeof *feeds);
}

typedef struct spec_t {
  int32_t input;    /* model input index, -1 = not named */
  const char* file;
  int constant;
} spec_t;

/* "NAME=FILE" names an input only when NAME is one: file names may contain
 * '=' themselves. */
static int32_t find_input_prefix(const cli_io_t* io, const char* spec, const char** file) {
  const char* eq = strchr(spec, '=');
  *file = spec;
  if (!eq) return -1;
  size_t len = (size_t)(eq - spec);
  for (uint32_t i = 0; i < io->count; i++) {
    const axle_tensor_info_t* info = &io->info[i];
    if (!info->name) continue;
    if (strlen(info->name) == len && memcmp(info->name, spec, len) == 0) {
      *file = eq + 1;
      return (int32_t)i;
    }
  }
  return -1;
}

static void list_inputs(const cli_io_t* io, char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < io->count && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                             io->info[i].name ? io->info[i].name : "?");
}

int cli_load_feeds(const char* cmd, const cli_io_t* io, const cli_strv_t* input_specs,
                   const cli_strv_t* const_specs, const tio_image_options_t* img,
                   cli_feeds_t* inputs, cli_feeds_t* constants) {
  memset(inputs, 0, sizeof *inputs);
  memset(constants, 0, sizeof *constants);
  uint32_t n_in = input_specs ? input_specs->n : 0, n_const = const_specs ? const_specs->n : 0;
  uint32_t total = n_in + n_const, model_inputs = io->count;
  if (total == 0) return CLI_OK;

  int rc = CLI_FAIL;
  spec_t* specs = calloc(total, sizeof *specs);
  uint8_t* named = calloc(model_inputs ? model_inputs : 1, 1);
  inputs->names = calloc(total, sizeof *inputs->names);
  inputs->tensors = calloc(total, sizeof *inputs->tensors);
  constants->names = calloc(total, sizeof *constants->names);
  constants->tensors = calloc(total, sizeof *constants->tensors);
  if (!specs || !named || !inputs->names || !inputs->tensors || !constants->names ||
      !constants->tensors) {
    rc = cli_fail("out of memory");
    goto done;
  }
  char known[512];
  list_inputs(io, known, sizeof known);

  int32_t unnamed = -1;
  for (uint32_t i = 0; i < total; i++) {
    specs[i].constant = i >= n_in;
    const char* s = specs[i].constant ? const_specs->v[i - n_in] : input_specs->v[i];
    specs[i].input = find_input_prefix(io, s, &specs[i].file);
    if (specs[i].input >= 0) {
      if (named[specs[i].input]) {
        rc = cli_usage_error(cmd, "input given twice: '%s'", s);
        goto done;
      }
      named[specs[i].input] = 1;
    } else if (unnamed >= 0) {
      rc = cli_usage_error(cmd, "several files without NAME=; the model's inputs are: %s", known);
      goto done;
    } else {
      unnamed = (int32_t)i;
    }
  }
  if (unnamed >= 0) {
    /* A bare FILE means "the" input: the one left after the named ones. */
    int32_t left = -1;
    uint32_t left_count = 0;
    for (uint32_t i = 0; i < model_inputs; i++)
      if (!named[i]) {
        left = (int32_t)i;
        left_count++;
      }
    const char* s = specs[unnamed].file;
    const char* eq = strchr(s, '=');
    /* "NAME=FILE" with a NAME the model lacks, rather than a file name with
     * '=' in it: say so instead of failing to open "NAME=FILE". */
    if (eq && access(s, F_OK) != 0 && access(eq + 1, F_OK) == 0) {
      rc = cli_fail("invalid argument: no model input is called '%.*s'; the inputs are: %s",
                    (int)(eq - s), s, known);
      goto done;
    }
    if (left_count != 1) {
      if (left_count == 0)
        rc = cli_usage_error(cmd, "'%s': every model input is already given", s);
      else
        rc = cli_usage_error(cmd, "the model has %u inputs to give (%s): use NAME=FILE",
                             left_count, known);
      goto done;
    }
    specs[unnamed].input = left;
  }

  for (uint32_t i = 0; i < total; i++) {
    const axle_tensor_info_t info = io->info[specs[i].input];
    char err[TIO_ERR_SIZE];
    axle_tensor_t* t;
    if (tio_load_for_input(specs[i].file, &info, img, &t, err, sizeof err)) {
      rc = cli_fail("%s", err);
      goto done;
    }
    cli_feeds_t* f = specs[i].constant ? constants : inputs;
    f->names[f->count] = info.name;
    f->tensors[f->count++] = t;
  }
  rc = CLI_OK;
done:
  if (rc != CLI_OK) {
    cli_feeds_free(inputs);
    cli_feeds_free(constants);
  }
  free(specs);
  free(named);
  return rc;
}

int cli_feed_shapes(const cli_io_t* io, const cli_feeds_t* feeds,
                    axle_tensor_info_t** out, uint32_t* out_count) {
  *out = NULL;
  *out_count = 0;
  if (!feeds->count) return CLI_OK;
  axle_tensor_info_t* shapes = calloc(feeds->count, sizeof *shapes);
  if (!shapes) return cli_fail("out of memory");
  uint32_t n = 0;
  for (uint32_t i = 0; i < feeds->count; i++) {
    for (uint32_t j = 0; j < io->count; j++) {
      const axle_tensor_info_t* info = &io->info[j];
      if (!info->name || strcmp(info->name, feeds->names[i]) != 0) continue;
      int symbolic = 0;
      for (uint32_t d = 0; d < info->rank; d++) symbolic |= info->shape[d] < 0;
      if (!symbolic) break;
      axle_tensor_info_t* s = &shapes[n++];
      s->struct_size = sizeof *s;
      s->name = feeds->names[i];
      s->dtype = axle_tensor_dtype(feeds->tensors[i]);
      s->rank = axle_tensor_rank(feeds->tensors[i]);
      memcpy(s->shape, axle_tensor_shape(feeds->tensors[i]), s->rank * sizeof(int64_t));
      break;
    }
  }
  *out = shapes;
  *out_count = n;
  return CLI_OK;
}

int cli_io_from_model(const axle_model_t* model, cli_io_t* io) {
  io->count = axle_model_input_count(model);
  io->info = calloc(io->count ? io->count : 1, sizeof *io->info);
  if (!io->info) return cli_fail("out of memory");
  for (uint32_t i = 0; i < io->count; i++) {
    io->info[i].struct_size = sizeof io->info[i];
    axle_status_t st = axle_model_input_info(model, i, &io->info[i]);
    if (st != AXLE_OK) return cli_fail_status(st);
  }
  return CLI_OK;
}

int cli_io_from_session(const axle_session_t* session, cli_io_t* io) {
  cli_io_free(io);
  io->count = axle_session_input_count(session);
  io->info = calloc(io->count ? io->count : 1, sizeof *io->info);
  if (!io->info) return cli_fail("out of memory");
  for (uint32_t i = 0; i < io->count; i++) {
    io->info[i].struct_size = sizeof io->info[i];
    axle_status_t st = axle_session_input_info(session, i, &io->info[i]);
    if (st != AXLE_OK) return cli_fail_status(st);
  }
  return CLI_OK;
}

void cli_io_free(cli_io_t* io) {
  free(io->info);
  io->info = NULL;
  io->count = 0;
}
