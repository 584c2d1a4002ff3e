/*
 * Shared pieces of the axle command-line tool: the command table, error
 * reporting with the tool's exit-code convention, option helpers, and the
 * loading of --input/--const files for a model.
 *
 * Exit codes: 0 success, 1 failure (Axle or file error), 2 usage error.
 */
#ifndef AXLE_TOOLS_CLI_H_
#define AXLE_TOOLS_CLI_H_

#include <stdint.h>
#include <stdio.h>

#include <axle/axle.h>

#include "tensor_io.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

/* Commands: argv[0] is the command name. */
int cmd_devices(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_bench(int argc, char** argv);
void cmd_devices_usage(FILE* f);
void cmd_info_usage(FILE* f);
void cmd_run_usage(FILE* f);
void cmd_bench_usage(FILE* f);
int cmd_drpai_translate(int argc, char** argv);
void cmd_drpai_translate_usage(FILE* f);

/* "axle: <status string>: <message>" on stderr; returns CLI_FAIL. */
int cli_fail_status(axle_status_t status);
/* "axle: <message>" on stderr; returns CLI_FAIL. */
int cli_fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* "axle <cmd>: <message>" and a pointer to --help on stderr; returns CLI_USAGE. */
int cli_usage_error(const char* cmd, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reports getopt_long's '?' / ':' results for argv; returns CLI_USAGE. */
int cli_getopt_error(const char* cmd, int opt, char** argv);

/* Growable list of borrowed strings (option values point into argv). */
typedef struct cli_strv_t {
  const char** v;
  uint32_t n, cap;
} cli_strv_t;
int cli_strv_push(cli_strv_t* list, const char* s); /* -1 on out of memory */
void cli_strv_free(cli_strv_t* list);

/* Parsers; return 0 on success. */
int cli_parse_u32(const char* s, uint32_t* out);
/* A decimal ("0.5", "1e-3") or a fraction ("1/255"). */
int cli_parse_scale(const char* s, double* out);

/* "12.5 MiB". */
void cli_format_bytes(char* buf, size_t size, uint64_t bytes);
/* Monotonic clock in milliseconds. */
double cli_now_ms(void);

/* Creates a runtime (plugin discovery as usual) and loads each explicit
 * plugin path. Returns CLI_OK or the exit code after reporting. */
int cli_runtime_create(const cli_strv_t* plugins, axle_runtime_t** out);
/* Plugins refused during discovery, one "axle: plugin refused: ..." line
 * each, on stderr. */
void cli_print_diagnostics(const axle_runtime_t* runtime);

/* Named tensors for session inputs. names borrow from the model. */
typedef struct cli_feeds_t {
  uint32_t count;
  const char** names;
  axle_tensor_t** tensors;
} cli_feeds_t;
void cli_feeds_free(cli_feeds_t* feeds);

/* The inputs feeds are matched against: a model's (ONNX) or, for native
 * artifacts whose inputs only a device can describe, a session's. Names
 * borrow from the model or session. */
typedef struct cli_io_t {
  uint32_t count;
  axle_tensor_info_t* info;
} cli_io_t;
int cli_io_from_model(const axle_model_t* model, cli_io_t* io);
int cli_io_from_session(const axle_session_t* session, cli_io_t* io);
void cli_io_free(cli_io_t* io);

/* Resolves the NAME=FILE (or bare FILE) specs of --input and --const against
 * the model's inputs and loads the files (tensor_io, converted to each
 * input's dtype/shape). A bare FILE goes to the one input no spec names.
 * Returns CLI_OK, or CLI_FAIL / CLI_USAGE after reporting. */
int cli_load_feeds(const char* cmd, const cli_io_t* io, const cli_strv_t* input_specs,
                   const cli_strv_t* const_specs, const tio_image_options_t* img,
                   cli_feeds_t* inputs, cli_feeds_t* constants);

/* --calibrate PATH: a folder of .npy/.pgm/.ppm files (one sample each, in
 * name order) or one .npy of N stacked samples, for a one-input model. */
int cli_load_calibration(const cli_io_t* io, const char* path, const tio_image_options_t* img,
                         cli_feeds_t* out);

/* Input shapes for session options: one axle_tensor_info_t per feed whose
 * model input has symbolic dimensions (filled from the loaded tensor).
 * Caller frees *out with free(). */
int cli_feed_shapes(const cli_io_t* io, const cli_feeds_t* feeds,
                    axle_tensor_info_t** out, uint32_t* out_count);

#endif /* AXLE_TOOLS_CLI_H_ */
