/*
 * axle drpai-translate: an ONNX model -> a DRP-AI object-file directory
 * (aimac_*.bin, drp_desc.bin, drp_param.bin, drp_param_info.txt, weight.dat,
 * drpcfg.mem, addr_map.txt) that a board application, or Axle itself, loads.
 *
 * The tool uses the public API only. The translation lives in the drpai
 * plugin: a strict session on device "drpai" compiles the whole model, and
 * the plugin writes the partition it compiled to AXLE_DRPAI_EMIT_DIR, with
 * the AXLE_DRPAI_PREPOST pipeline in front (docs/drpai.md, "Translating").
 * The directory is then loaded back as a model to check it and describe it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cmd_drpai_translate_usage(FILE* f) {
  fprintf(f,
          "usage: axle drpai-translate MODEL.onnx --calibrate PATH [--prepost PREPOST.yaml] -o DIR\n"
          "\n"
          "Translates MODEL for the Renesas RZ/V2H DRP-AI into DIR: the DRP-AI object files\n"
          "(Axle's encoding, docs/drpai.md) plus addr_map.txt, ready for the driver's\n"
          "ASSIGN/write/START sequence or for 'axle run DIR'.\n"
          "\n"
          "  --calibrate PATH     sample inputs (a folder of .npy/.pgm/.ppm files or one stacked\n"
          "                       .npy): the DRP-AI computes in int8, and the quantization of\n"
          "                       every tensor comes from running the float model over them\n"
          "  --prepost FILE       DRP pre/post-processing YAML (camera input such as YUY2,\n"
          "                       crop, conv_yuv2rgb, resize_hwc, imagescaler, transpose;\n"
          "                       softmax); without it the program takes the model's inputs\n"
          "  -o, --output DIR     directory to write (created if missing)\n"
          "  --base ADDR          first DRP-AI address of the program (default 0x0; with\n"
          "                       SET_ADRCONV it can be placed anywhere)\n"
          "  --scale S, --invert  how image calibration files become inputs (as for 'run')\n"
          "  --plugin PATH        also load the plugin shared library at PATH\n"
          "  -h, --help           show this help\n");
}

typedef struct args_t {
  const char *model, *calibrate, *prepost, *out, *base;
  cli_strv_t plugins;
  tio_image_options_t img;
} args_t;

enum { OPT_CALIBRATE = 256, OPT_PREPOST, OPT_BASE, OPT_SCALE, OPT_INVERT, OPT_PLUGIN };

static int parse_args(int argc, char** argv, args_t* a) {
  static const struct option opts[] = {
      {"calibrate", required_argument, NULL, OPT_CALIBRATE},
      {"prepost", required_argument, NULL, OPT_PREPOST},
      {"output", required_argument, NULL, 'o'},
      {"base", required_argument, NULL, OPT_BASE},
      {"scale", required_argument, NULL, OPT_SCALE},
      {"invert", no_argument, NULL, OPT_INVERT},
      {"plugin", required_argument, NULL, OPT_PLUGIN},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int opt;
  opterr = 0;
  optind = 0;
  while ((opt = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (opt) {
      case OPT_CALIBRATE: a->calibrate = optarg; break;
      case OPT_PREPOST: a->prepost = optarg; break;
      case 'o': a->out = optarg; break;
      case OPT_BASE: a->base = optarg; break;
      case OPT_SCALE:
        if (cli_parse_scale(optarg, &a->img.scale))
          return cli_usage_error("drpai-translate", "--scale wants a number or a fraction, not '%s'", optarg);
        break;
      case OPT_INVERT: a->img.invert = 1; break;
      case OPT_PLUGIN:
        if (cli_strv_push(&a->plugins, optarg)) return cli_fail("out of memory");
        break;
      case 'h': cmd_drpai_translate_usage(stdout); return -1;
      default: return cli_getopt_error("drpai-translate", opt, argv);
    }
  }
  if (optind >= argc) return cli_usage_error("drpai-translate", "missing MODEL");
  if (optind + 1 < argc) return cli_usage_error("drpai-translate", "unexpected argument '%s'", argv[optind + 1]);
  a->model = argv[optind];
  if (!a->out) return cli_usage_error("drpai-translate", "missing -o DIR");
  if (!a->calibrate)
    return cli_usage_error("drpai-translate",
                           "missing --calibrate PATH: the DRP-AI computes in int8 and the quantization "
                           "comes from sample inputs");
  if (a->base) {
    char* end;
    errno = 0;
    unsigned long v = strtoul(a->base, &end, 0);
    if (errno || *end || v > 0xFBFFFFFFul || v % 64)
      return cli_usage_error("drpai-translate", "--base wants a 64-byte aligned address below 0xFC000000, not '%s'",
                             a->base);
  }
  return CLI_OK;
}

/* What the directory holds, read back through the DRP-AI plugin. */
static int describe(axle_runtime_t* rt, const char* dir) {
  axle_model_t* m = NULL;
  axle_session_t* s = NULL;
  const char* devices[] = {"drpai"};
  axle_session_options_t so = {.struct_size = sizeof so, .devices = devices, .device_count = 1};
  axle_status_t st = axle_model_load_file(dir, &m);
  if (st == AXLE_OK) st = axle_session_create(rt, m, &so, &s);
  int rc = st == AXLE_OK ? CLI_OK : cli_fail_status(st);
  for (uint32_t i = 0; rc == CLI_OK && i < axle_session_input_count(s) + axle_session_output_count(s); ++i) {
    uint32_t nin = axle_session_input_count(s);
    axle_tensor_info_t info = {.struct_size = sizeof info};
    st = i < nin ? axle_session_input_info(s, i, &info) : axle_session_output_info(s, i - nin, &info);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      break;
    }
    char shape[256];
    tio_format_shape(shape, sizeof shape, info.rank, info.shape);
    printf("  %s %-16s %s %s\n", i < nin ? "input " : "output", info.name, axle_dtype_name(info.dtype), shape);
  }
  axle_session_release(s);
  axle_model_release(m);
  return rc;
}

int cmd_drpai_translate(int argc, char** argv) {
  args_t a = {.img = TIO_IMAGE_OPTIONS_DEFAULT};
  int rc = parse_args(argc, argv, &a);
  if (rc != CLI_OK) {
    cli_strv_free(&a.plugins);
    return rc < 0 ? CLI_OK : rc;
  }
  /* The plugin reads these when it compiles (and only then). */
  if (setenv("AXLE_DRPAI_EMIT_DIR", a.out, 1) != 0 ||
      (a.prepost ? setenv("AXLE_DRPAI_PREPOST", a.prepost, 1) : unsetenv("AXLE_DRPAI_PREPOST")) != 0 ||
      (a.base ? setenv("AXLE_DRPAI_ORG_BASE", a.base, 1) : unsetenv("AXLE_DRPAI_ORG_BASE")) != 0) {
    cli_strv_free(&a.plugins);
    return cli_fail("cannot set the environment: %s", strerror(errno));
  }
  axle_runtime_t* rt = NULL;
  axle_model_t* model = NULL;
  axle_session_t* sess = NULL;
  cli_io_t io = {0};
  cli_feeds_t calib = {0};
  uint32_t dev;
  axle_status_t st;
  if ((rc = cli_runtime_create(&a.plugins, &rt)) != CLI_OK) goto done;
  if (axle_runtime_device_find(rt, "drpai", &dev) != AXLE_OK) {
    rc = cli_fail("no 'drpai' device: the DRP-AI plugin (axle_plugin_drpai.so) is not on AXLE_PLUGIN_PATH");
    cli_print_diagnostics(rt);
    goto done;
  }
  if ((st = axle_model_load_file(a.model, &model)) != AXLE_OK) {
    rc = cli_fail_status(st);
    goto done;
  }
  if ((rc = cli_io_from_model(model, &io)) != CLI_OK) goto done;
  if (io.count == 0) {
    rc = cli_fail("%s is not an ONNX model", a.model);
    goto done;
  }
  if ((rc = cli_load_calibration(&io, a.calibrate, &a.img, &calib)) != CLI_OK) goto done;
  const char* devices[] = {"drpai"};
  /* Strict: the object-file set is the whole model, or nothing. */
  axle_session_options_t so = {
      .struct_size = sizeof so,
      .flags = AXLE_SESSION_STRICT,
      .devices = devices,
      .device_count = 1,
      .calibration_count = calib.count,
      .calibration_inputs = calib.tensors,
  };
  if ((st = axle_session_create(rt, model, &so, &sess)) != AXLE_OK) {
    rc = cli_fail_status(st);
    goto done;
  }
  axle_session_release(sess);
  sess = NULL;
  unsetenv("AXLE_DRPAI_EMIT_DIR");
  printf("%s -> %s (%u calibration sample%s%s%s)\n", a.model, a.out, calib.count, calib.count == 1 ? "" : "s",
         a.prepost ? ", prepost " : "", a.prepost ? a.prepost : "");
  rc = describe(rt, a.out);

done:
  axle_session_release(sess);
  cli_feeds_free(&calib);
  cli_io_free(&io);
  axle_model_release(model);
  axle_runtime_release(rt);
  cli_strv_free(&a.plugins);
  return rc;
}
