/* axle devices: the runtime's devices as a table, refused plugins on stderr. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cmd_devices_usage(FILE* f) {
  fprintf(f,
          "usage: axle devices [--plugin PATH]... [--verbose]\n"
          "\n"
          "Lists every device of the loaded HAL plugins: name (what --device takes), plugin,\n"
          "kind, whether it is an emulator or real hardware, and its memory (\"host\" when it\n"
          "uses host memory). Plugins that were found but refused are reported on stderr\n"
          "with the reason.\n"
          "\n"
          "options:\n"
          "  --plugin PATH   also load the plugin shared library at PATH\n"
          "  -v, --verbose   also list plugins (ABI version, file) and device dtypes\n"
          "  -h, --help      show this help\n");
}

static const char* kind_name(axle_device_kind_t kind) {
  switch (kind) {
    case AXLE_DEVICE_CPU: return "cpu";
    case AXLE_DEVICE_NPU: return "npu";
    case AXLE_DEVICE_DSP: return "dsp";
    case AXLE_DEVICE_FPGA: return "fpga";
    case AXLE_DEVICE_GPU: return "gpu";
    default: return "other";
  }
}

static void print_dtypes(uint64_t mask) {
  static const axle_dtype_t all[] = {
      AXLE_DTYPE_F32, AXLE_DTYPE_F16, AXLE_DTYPE_BF16, AXLE_DTYPE_F64, AXLE_DTYPE_I8,
      AXLE_DTYPE_U8,  AXLE_DTYPE_I16, AXLE_DTYPE_U16,  AXLE_DTYPE_I32, AXLE_DTYPE_U32,
      AXLE_DTYPE_I64, AXLE_DTYPE_U64, AXLE_DTYPE_BOOL,
  };
  int first = 1;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (mask & (1ull << all[i])) {
      printf("%s%s", first ? "" : " ", axle_dtype_name(all[i]));
      first = 0;
    }
  }
  if (first) printf("-");
}

int cmd_devices(int argc, char** argv) {
  static const struct option opts[] = {
      {"plugin", required_argument, NULL, 'p'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  cli_strv_t plugins = {0};
  int verbose = 0, opt, rc;
  opterr = 0;
  optind = 0;
  while ((opt = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
    switch (opt) {
      case 'p':
        if (cli_strv_push(&plugins, optarg)) {
          cli_strv_free(&plugins);
          return cli_fail("out of memory");
        }
        break;
      case 'v': verbose = 1; break;
      case 'h':
        cmd_devices_usage(stdout);
        cli_strv_free(&plugins);
        return CLI_OK;
      default:
        cli_strv_free(&plugins);
        return cli_getopt_error("devices", opt, argv);
    }
  }
  if (optind < argc) {
    cli_strv_free(&plugins);
    return cli_usage_error("devices", "unexpected argument '%s'", argv[optind]);
  }

  axle_runtime_t* rt;
  rc = cli_runtime_create(&plugins, &rt);
  cli_strv_free(&plugins);
  if (rc != CLI_OK) return rc;

  uint32_t n = axle_runtime_device_count(rt);
  /* Size the name columns to the data so that long device names (e.g.
   * "nvdla-small-emu0") keep the table aligned. */
  int wname = 6, wplugin = 6;
  for (uint32_t i = 0; i < n; i++) {
    axle_device_info_t d = {.struct_size = sizeof d};
    if (axle_runtime_device_info(rt, i, &d) != AXLE_OK) continue;
    if (d.name && (int)strlen(d.name) > wname) wname = (int)strlen(d.name);
    if (d.plugin && (int)strlen(d.plugin) > wplugin) wplugin = (int)strlen(d.plugin);
  }
  if (n) {
    printf("%-*s  %-*s  %-5s  %-8s  %10s  %s\n", wname, "DEVICE", wplugin, "PLUGIN", "KIND",
           "MODE", "MEMORY", verbose ? "DTYPES" : "DESCRIPTION");
  }
  rc = CLI_OK;
  for (uint32_t i = 0; i < n; i++) {
    axle_device_info_t d = {.struct_size = sizeof d};
    axle_status_t st = axle_runtime_device_info(rt, i, &d);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      continue;
    }
    char mem[32];
    if (d.memory_bytes)
      cli_format_bytes(mem, sizeof mem, d.memory_bytes);
    else
      snprintf(mem, sizeof mem, "host");
    printf("%-*s  %-*s  %-5s  %-8s  %10s  ", wname, d.name ? d.name : "?", wplugin,
           d.plugin ? d.plugin : "?", kind_name(d.kind), d.emulated ? "emulated" : "real", mem);
    if (verbose)
      print_dtypes(d.dtype_mask);
    else
      printf("%s", d.description ? d.description : "");
    printf("\n");
  }
  if (n == 0)
    fprintf(stderr, "axle: no devices (no plugin loaded; set AXLE_PLUGIN_PATH or use --plugin)\n");

  if (verbose) {
    uint32_t np = axle_runtime_plugin_count(rt);
    printf("\n%u plugin%s loaded:\n", np, np == 1 ? "" : "s");
    for (uint32_t i = 0; i < np; i++) {
      axle_plugin_info_t p = {.struct_size = sizeof p};
      axle_status_t st = axle_runtime_plugin_info(rt, i, &p);
      if (st != AXLE_OK) {
        rc = cli_fail_status(st);
        continue;
      }
      printf("  %-*s  ABI %u  features 0x%llx  %s\n", wplugin, p.name ? p.name : "?",
             p.abi_version, (unsigned long long)p.features, p.path ? p.path : "");
      if (p.description && *p.description) printf("  %-*s  %s\n", wplugin, "", p.description);
    }
  }
  fflush(stdout);
  cli_print_diagnostics(rt);
  axle_runtime_release(rt);
  return rc;
}
