/*
 * Fuzz target for the kmodel v3 loader: any bytes go through
 * k210_kmodel_parse; whatever it accepts is run once on the emulated chip
 * (unless its estimated work is large, to keep iterations fast). Neither step
 * may crash, leak or read out of bounds.
 *
 * Built with clang and -fsanitize=fuzzer,address (cmake -DAXLE_FUZZ=ON): a
 * libFuzzer binary. With other compilers: a replay driver that runs the files
 * named on its command line (a corpus) through the same function.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "k210_cycles.h"
#include "k210_kmodel.h"
#include "k210_run.h"

/* Skip running programs whose layers promise more than this much work. */
#define MAX_WORK 20000000ull

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int32_t status;
  char why[512];
  k210_kmodel_t* m = k210_kmodel_parse(data, size, "fuzz.kmodel", &status, why, sizeof(why));
  if (!m) return 0;
  uint64_t work = 0;
  for (uint32_t i = 0; i < m->layer_count; ++i) {
    const k210_kl_t* l = &m->layers[i];
    work += l->type == K210_KL_K210_CONV ? k210_macs_kpu_layer(&l->conv)
                                         : l->float_macs + l->element_ops + l->transcendentals;
  }
  if (work <= MAX_WORK) {
    size_t in_bytes = m->in_dtype == AXLE_HAL_DTYPE_U8
                          ? (size_t)m->in_map.channels * m->in_map.height * m->in_map.width
                          : (size_t)m->in_count * sizeof(float);
    void* input = calloc(1, in_bytes ? in_bytes : 1);
    void** outputs = calloc(m->output_count, sizeof(void*));
    int ok = input && outputs;
    for (uint32_t i = 0; ok && i < m->output_count; ++i) ok = (outputs[i] = malloc(m->out_size[i])) != NULL;
    k210_chip_t chip;
    if (ok && k210_chip_init(&chip)) {
      uint64_t cycles;
      k210_run(&chip, m, input, outputs, K210_ACT_RULE_V02, NULL, &cycles, why, sizeof(why));
      k210_chip_free(&chip);
    }
    for (uint32_t i = 0; outputs && i < m->output_count; ++i) free(outputs[i]);
    free(outputs);
    free(input);
  }
  k210_kmodel_free(m);
  return 0;
}

#ifndef AXLE_LIBFUZZER
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    FILE* f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "%s: cannot open\n", argv[i]);
      return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t* data = malloc(n > 0 ? (size_t)n : 1);
    size_t got = data ? fread(data, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    fclose(f);
    /* Every prefix too: truncation is the commonest damage. */
    for (size_t cut = 0; data && cut <= got; cut += 1 + cut / 16) LLVMFuzzerTestOneInput(data, cut);
    if (data) LLVMFuzzerTestOneInput(data, got);
    free(data);
  }
  return 0;
}
#endif
