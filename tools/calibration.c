/* --calibrate: sample inputs for 8-bit devices, from a folder of images or
 * .npy files, or from one .npy holding N samples stacked on a leading axis. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int name_cmp(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static int push(cli_feeds_t* out, axle_tensor_t* t, const char* name) {
  axle_tensor_t** grown = realloc(out->tensors, (out->count + 1) * sizeof *grown);
  const char** names = realloc(out->names, (out->count + 1) * sizeof *names);
  if (grown) out->tensors = grown;
  if (names) out->names = names;
  if (!grown || !names) {
    axle_tensor_release(t);
    return cli_fail("out of memory");
  }
  out->names[out->count] = name;
  out->tensors[out->count++] = t;
  return CLI_OK;
}

/* One .npy with N samples: element count N x the input's, split in order. */
static int load_stacked(const char* path, const axle_tensor_info_t* want, cli_feeds_t* out) {
  char err[TIO_ERR_SIZE];
  axle_tensor_t* all = NULL;
  if (tio_read_npy(path, &all, err, sizeof err)) return cli_fail("%s", err);
  int64_t per = 1;
  for (uint32_t d = 0; d < want->rank; d++) per *= want->shape[d] < 0 ? 1 : want->shape[d];
  int64_t total = axle_tensor_element_count(all);
  if (per <= 0 || total == 0 || total % per != 0) {
    axle_tensor_release(all);
    return cli_fail("%s: %lld values do not split into samples of %lld for input '%s'", path,
                    (long long)total, (long long)per, want->name);
  }
  int64_t shape[AXLE_MAX_RANK];
  for (uint32_t d = 0; d < want->rank; d++) shape[d] = want->shape[d] < 0 ? 1 : want->shape[d];
  const void* src = axle_tensor_data(all);
  axle_dtype_t from = axle_tensor_dtype(all);
  int rc = CLI_OK;
  for (int64_t k = 0; rc == CLI_OK && k < total / per; k++) {
    axle_tensor_t* t = NULL;
    axle_status_t st = axle_tensor_create(want->dtype, want->rank, shape, &t);
    if (st != AXLE_OK) {
      rc = cli_fail_status(st);
      break;
    }
    void* dst = axle_tensor_data(t);
    for (int64_t i = 0; i < per; i++)
      tio_set(dst, want->dtype, (size_t)i, tio_get(src, from, (size_t)(k * per + i)));
    rc = push(out, t, want->name);
  }
  axle_tensor_release(all);
  return rc;
}

int cli_load_calibration(const cli_io_t* io, const char* path, const tio_image_options_t* img,
                         cli_feeds_t* out) {
  memset(out, 0, sizeof *out);
  if (io->count != 1)
    return cli_usage_error("run", "--calibrate needs a model with one input (this one has %u)",
                           io->count);
  const axle_tensor_info_t* want = &io->info[0];
  struct stat sb;
  if (stat(path, &sb) != 0) return cli_fail("%s: no such file or folder", path);
  if (!S_ISDIR(sb.st_mode)) {
    int rc = load_stacked(path, want, out);
    if (rc != CLI_OK) cli_feeds_free(out);
    return rc;
  }
  DIR* d = opendir(path);
  if (!d) return cli_fail("%s: cannot open folder", path);
  char** names = NULL;
  size_t n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (tio_kind_from_path(e->d_name) == TIO_KIND_UNKNOWN) continue;
    char** g = realloc(names, (n + 1) * sizeof *names);
    if (!g) break;
    names = g;
    names[n] = strdup(e->d_name);
    if (names[n]) n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, name_cmp);
  int rc = n ? CLI_OK : cli_fail("%s: no .npy, .pgm or .ppm files to calibrate with", path);
  for (size_t i = 0; i < n; i++) {
    if (rc == CLI_OK) {
      char file[4096], err[TIO_ERR_SIZE];
      snprintf(file, sizeof file, "%s/%s", path, names[i]);
      axle_tensor_t* t = NULL;
      if (tio_load_for_input(file, want, img, &t, err, sizeof err))
        rc = cli_fail("%s", err);
      else
        rc = push(out, t, want->name);
    }
    free(names[i]);
  }
  free(names);
  if (rc != CLI_OK) cli_feeds_free(out);
  return rc;
}
