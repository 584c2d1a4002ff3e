/* axle info: what a model takes and gives, and what it is made of. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cmd_info_usage(FILE* f) {
  fprintf(f,
          "usage: axle info [--nodes] [--optimized [--device D]... [--threads N]] MODEL\n"
          "\n"
          "Prints the model's inputs and outputs (name, dtype, shape; '?' marks a symbolic\n"
          "dimension; quantization when present), its opset, node count and how many nodes\n"
          "of each op type it has.\n"
          "\n"
          "options:\n"
          "  --nodes      also list every node (index, name, op type) in execution order\n"
          "  --optimized  also build a session and print the optimized graph: what each\n"
          "               node became (placed, folded into a constant, removed as dead),\n"
          "               the partitions and what each device runs after its own fusion\n"
          "  -d, --device D   with --optimized: preferred devices (repeatable)\n"
          "  -t, --threads N  with --optimized: threads for the plugins\n"
          "  -h, --help   show this help\n"
          "\n"
          "example:\n"
          "  axle info examples/digits/digits.onnx\n");
}

static void print_tensor(const axle_tensor_info_t* t, int name_width) {
  char shape[256];
  tio_format_shape(shape, sizeof shape, t->rank, t->shape);
  printf("  %-*s  %-8s %s", name_width, t->name ? t->name : "?", axle_dtype_name(t->dtype), shape);
  if (t->quant.count == 1 && t->quant.scales) {
    printf("  quant scale %g zero point %d", t->quant.scales[0],
           t->quant.zero_points ? t->quant.zero_points[0] : 0);
  } else if (t->quant.count > 1) {
    printf("  quant per channel (%u) along axis %d", t->quant.count, t->quant.axis);
  }
  printf("\n");
}

typedef struct op_count_t {
  const char* op;
  uint32_t count;
} op_count_t;

static int by_count_then_name(const void* a, const void* b) {
  const op_count_t* x = a;
  const op_count_t* y = b;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  return strcmp(x->op, y->op);
}

static int name_width(const axle_model_t* model) {
  int width = 4;
  for (int side = 0; side < 2; side++) {
    uint32_t n = side ? axle_model_output_count(model) : axle_model_input_count(model);
    for (uint32_t i = 0; i < n; i++) {
      axle_tensor_info_t t = {.struct_size = sizeof t};
      axle_status_t st = side ? axle_model_output_info(model, i, &t)
                              : axle_model_input_info(model, i, &t);
      if (st == AXLE_OK && t.name && (int)strlen(t.name) > width) width = (int)strlen(t.name);
    }
  }
  return width;
}

static int print_side(const axle_model_t* model, int inputs, int width) {
  uint32_t n = inputs ? axle_model_input_count(model) : axle_model_output_count(model);
  printf("%s (%u):\n", inputs ? "inputs" : "outputs", n);
  for (uint32_t i = 0; i < n; i++) {
    axle_tensor_info_t t = {.struct_size = sizeof t};
    axle_status_t st = inputs ? axle_model_input_info(model, i, &t)
                              : axle_model_output_info(model, i, &t);
    if (st != AXLE_OK) return cli_fail_status(st);
    print_tensor(&t, width);
  }
  return CLI_OK;
}

/* The session's view: shapes made concrete, constants folded, dead nodes
 * dropped, nodes placed, and each plugin's own account of what it runs. */
static int print_optimized(axle_model_t* model, const cli_strv_t* devices, uint32_t threads) {
  axle_runtime_t* rt = NULL;
  axle_session_t* sess = NULL;
  int rc = cli_runtime_create(NULL, &rt);
  if (rc != CLI_OK) return rc;
  axle_session_options_t so = {.struct_size = sizeof so,
                               .devices = devices->n ? devices->v : NULL,
                               .device_count = devices->n,
                               .threads = threads};
  axle_status_t st = axle_session_create(rt, model, &so, &sess);
  char* report = NULL;
  if (st == AXLE_OK) st = axle_session_placement_report(sess, AXLE_REPORT_TEXT, &report);
  if (st != AXLE_OK) {
    rc = cli_fail_status(st);
  } else {
    printf("optimized:\n%s", report);
  }
  axle_free(report);
  axle_session_release(sess);
  axle_runtime_release(rt);
  return rc;
}

int cmd_info(int argc, char** argv) {
  static const struct option opts[] = {
      {"nodes", no_argument, NULL, 'n'},
      {"optimized", no_argument, NULL, 'O'},
      {"device", required_argument, NULL, 'd'},
      {"threads", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int list_nodes = 0, optimized = 0, opt;
  uint32_t threads = 0;
  cli_strv_t devices = {0};
  opterr = 0;
  optind = 0;
  while ((opt = getopt_long(argc, argv, ":d:t:h", opts, NULL)) != -1) {
    switch (opt) {
      case 'n': list_nodes = 1; break;
      case 'O': optimized = 1; break;
      case 'd':
        if (cli_strv_push(&devices, optarg)) return cli_fail("out of memory");
        break;
      case 't':
        if (cli_parse_u32(optarg, &threads)) {
          cli_strv_free(&devices);
          return cli_usage_error("info", "--threads wants a count, not '%s'", optarg);
        }
        break;
      case 'h': cmd_info_usage(stdout); cli_strv_free(&devices); return CLI_OK;
      default: cli_strv_free(&devices); return cli_getopt_error("info", opt, argv);
    }
  }
  if (optind >= argc || optind + 1 < argc) {
    cli_strv_free(&devices);
    return optind >= argc ? cli_usage_error("info", "missing MODEL")
                          : cli_usage_error("info", "unexpected argument '%s'", argv[optind + 1]);
  }
  const char* path = argv[optind];

  axle_model_t* model;
  axle_status_t st = axle_model_load_file(path, &model);
  if (st != AXLE_OK) return cli_fail_status(st);

  int rc = CLI_OK;
  uint32_t nodes = axle_model_node_count(model);
  op_count_t* hist = calloc(nodes ? nodes : 1, sizeof *hist);
  if (!hist) {
    axle_model_release(model);
    return cli_fail("out of memory");
  }
  printf("model: %s\n", path);
  printf("opset: %lld\n", (long long)axle_model_opset(model));
  int width = name_width(model);
  if ((rc = print_side(model, 1, width)) != CLI_OK || (rc = print_side(model, 0, width)) != CLI_OK)
    goto done;

  /* A linear search per node is fine: models use a few dozen op types. */
  uint32_t kinds = 0;
  if (list_nodes) printf("node list:\n");
  for (uint32_t i = 0; i < nodes; i++) {
    const char *name = NULL, *op = NULL;
    st = axle_model_node_info(model, i, &name, &op);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      goto done;
    }
    if (!op) op = "?";
    if (list_nodes) printf("  %4u  %-24s %s\n", i, name && *name ? name : "(unnamed)", op);
    uint32_t k = 0;
    while (k < kinds && strcmp(hist[k].op, op) != 0) k++;
    if (k == kinds) hist[kinds++].op = op;
    hist[k].count++;
  }
  qsort(hist, kinds, sizeof *hist, by_count_then_name);
  printf("nodes: %u (%u op type%s)\n", nodes, kinds, kinds == 1 ? "" : "s");
  for (uint32_t k = 0; k < kinds; k++) printf("  %-24s %u\n", hist[k].op, hist[k].count);
  if (optimized) rc = print_optimized(model, &devices, threads);
done:
  free(hist);
  axle_model_release(model);
  cli_strv_free(&devices);
  return rc;
}
