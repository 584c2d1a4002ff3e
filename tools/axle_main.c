/* The axle command-line tool: global options and command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command_t {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
  void (*usage)(FILE* f);
} command_t;

static const command_t kCommands[] = {
    {"devices", "list devices, their plugins, and plugins that were refused", cmd_devices,
     cmd_devices_usage},
    {"info", "describe a model: inputs, outputs, opset, ops", cmd_info, cmd_info_usage},
    {"run", "run a model on input files and print its outputs", cmd_run, cmd_run_usage},
    {"bench", "measure a model's latency", cmd_bench, cmd_bench_usage},
    {"drpai-translate", "translate a model into DRP-AI object files", cmd_drpai_translate,
     cmd_drpai_translate_usage},
};
#define COMMAND_COUNT (sizeof kCommands / sizeof kCommands[0])

static void usage(FILE* f) {
  fprintf(f,
          "usage: axle [--version] [--help] <command> [<args>]\n"
          "\n"
          "Axle %s: run ONNX models on accelerators through HAL plugins.\n"
          "\n"
          "commands:\n",
          axle_version_string());
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    fprintf(f, "  %-9s %s\n", kCommands[i].name, kCommands[i].summary);
  fprintf(f,
          "\n"
          "'axle help <command>' or 'axle <command> --help' describes a command.\n"
          "Plugins are searched in AXLE_PLUGIN_PATH (colon-separated), then next to libaxle\n"
          "in <libdir>/axle/plugins.\n");
}

static const command_t* find_command(const char* name) {
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    if (strcmp(kCommands[i].name, name) == 0) return &kCommands[i];
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  const char* first = argv[1];
  if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
    printf("axle %s\n", axle_version_string());
    return CLI_OK;
  }
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
    usage(stdout);
    return CLI_OK;
  }
  if (strcmp(first, "help") == 0) {
    if (argc < 3) {
      usage(stdout);
      return CLI_OK;
    }
    const command_t* c = find_command(argv[2]);
    if (!c) {
      fprintf(stderr, "axle: unknown command '%s'\n\n", argv[2]);
      usage(stderr);
      return CLI_USAGE;
    }
    c->usage(stdout);
    return CLI_OK;
  }
  const command_t* c = find_command(first);
  if (!c) {
    fprintf(stderr, "axle: unknown %s '%s'\n\n", first[0] == '-' ? "option" : "command", first);
    usage(stderr);
    return CLI_USAGE;
  }
  return c->run(argc - 1, argv + 1);
}
