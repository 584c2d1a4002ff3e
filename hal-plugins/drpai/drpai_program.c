/* DRP-AI programs: object-file directories, addr_map.txt and the container. */
#include "drpai_program.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char* const drpai_file_names[DRPAI_FILE_COUNT] = {
    "aimac_desc.bin", "aimac_cmd.bin", "aimac_param_desc.bin", "aimac_param_cmd.bin",
    "drp_desc.bin",   "drp_param.bin", "drp_param_info.txt",   "weight.dat",
    "drpcfg.mem"};

const char* const drpai_region_names[DRPAI_REGION_COUNT] = {
    "data_in",   "data_out",  "work",       "drp_config",       "drp_desc",       "drp_param",
    "aimac_desc", "aimac_cmd", "aimac_param_desc", "aimac_param_cmd", "weight"};

/* An object file is at most this large: far beyond any DRP-AI memory area,
 * small enough that sizes stay 32-bit. */
#define MAX_FILE_BYTES (1u << 30)
#define CONTAINER_MAGIC "AXDS"
#define CONTAINER_VERSION 1u
#define CONTAINER_HEADER 16u

int drpai_file_region(int file) {
  switch (file) {
    case DRPAI_FILE_AIMAC_DESC: return DRPAI_REGION_AIMAC_DESC;
    case DRPAI_FILE_AIMAC_CMD: return DRPAI_REGION_AIMAC_CMD;
    case DRPAI_FILE_AIMAC_PARAM_DESC: return DRPAI_REGION_AIMAC_PARAM_DESC;
    case DRPAI_FILE_AIMAC_PARAM_CMD: return DRPAI_REGION_AIMAC_PARAM_CMD;
    case DRPAI_FILE_DRP_DESC: return DRPAI_REGION_DRP_DESC;
    case DRPAI_FILE_DRP_PARAM: return DRPAI_REGION_DRP_PARAM;
    case DRPAI_FILE_WEIGHT: return DRPAI_REGION_WEIGHT;
    case DRPAI_FILE_DRPCFG: return DRPAI_REGION_DRP_CONFIG;
    default: return -1;
  }
}

static int fail(char* err, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char* err, size_t size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
  return -1;
}

void drpai_program_free(drpai_program_t* p) {
  for (int i = 0; i < DRPAI_FILE_COUNT; ++i) free(p->file[i].data);
  drpai_info_free(&p->info);
  memset(p, 0, sizeof(*p));
}

void drpai_program_layout(drpai_program_t* p, uint32_t org_base) {
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    int r = drpai_file_region(f);
    if (r >= 0) p->region[r].size = p->file[f].size;
  }
  uint64_t at = org_base;
  for (int r = 0; r < DRPAI_REGION_COUNT; ++r) {
    at = (at + DRPAI_ALIGN - 1) & ~(uint64_t)(DRPAI_ALIGN - 1);
    p->region[r].addr = (uint32_t)at;
    at += p->region[r].size;
  }
  p->org_base = org_base;
  p->total = (uint32_t)(at - org_base);
}

char* drpai_program_addr_map(const drpai_program_t* p) {
  size_t cap = DRPAI_REGION_COUNT * 64 + 1;
  char* s = (char*)malloc(cap);
  if (!s) return NULL;
  size_t at = 0;
  for (int r = 0; r < DRPAI_REGION_COUNT; ++r)
    at += (size_t)snprintf(s + at, cap - at, "%s 0x%08X 0x%08X\n", drpai_region_names[r],
                           p->region[r].addr, p->region[r].size);
  return s;
}

uint32_t drpai_program_io_count(const drpai_program_t* p, int output) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < p->info.io_count; ++i) n += p->info.io[i].output == output;
  return n;
}

const drpai_info_io_t* drpai_program_io(const drpai_program_t* p, int output, uint32_t index) {
  for (uint32_t i = 0; i < p->info.io_count; ++i)
    if (p->info.io[i].output == output && p->info.io[i].index == index) return &p->info.io[i];
  return NULL;
}

/* ---- parsing what a directory or container holds -------------------------- */

static int parse_addr_map(const char* text, size_t len, drpai_program_t* p, char* err, size_t es) {
  int seen[DRPAI_REGION_COUNT] = {0};
  size_t at = 0;
  while (at < len) {
    size_t end = at;
    while (end < len && text[end] != '\n') ++end;
    char line[256];
    size_t n = end - at;
    if (n >= sizeof(line)) return fail(err, es, "addr_map.txt: line longer than 255 characters");
    memcpy(line, text + at, n);
    line[n] = '\0';
    at = end + 1;
    char name[64];
    unsigned long long addr, size;
    char extra;
    int k = sscanf(line, "%63s %llx %llx %c", name, &addr, &size, &extra);
    if (k <= 0) continue; /* blank line */
    if (k != 3) return fail(err, es, "addr_map.txt: '%s' is not 'name address size'", line);
    int r = -1;
    for (int i = 0; i < DRPAI_REGION_COUNT; ++i)
      if (strcmp(name, drpai_region_names[i]) == 0) r = i;
    if (r < 0) continue; /* the vendor's maps list more areas; they do not concern us */
    if (seen[r]) return fail(err, es, "addr_map.txt: '%s' is listed twice", name);
    if (addr > UINT32_MAX || size > UINT32_MAX || addr % DRPAI_ALIGN)
      return fail(err, es, "addr_map.txt: '%s' needs a 64-byte aligned 32-bit address and size", name);
    seen[r] = 1;
    p->region[r].addr = (uint32_t)addr;
    p->region[r].size = (uint32_t)size;
  }
  for (int r = 0; r < DRPAI_REGION_COUNT; ++r)
    if (!seen[r]) return fail(err, es, "addr_map.txt: no '%s' line", drpai_region_names[r]);
  return 0;
}

static int parse_info(const drpai_blob_t* b, drpai_info_t* info, char* err, size_t es) {
  size_t at = 0, line_no = 0;
  while (at < b->size) {
    size_t end = at;
    while (end < b->size && b->data[end] != '\n') ++end;
    ++line_no;
    const char* why = NULL;
    int rc = drpai_info_parse_line(info, (const char*)b->data + at, end - at, &why);
    if (rc == -ENOMEM) return fail(err, es, "out of memory");
    if (rc) return fail(err, es, "drp_param_info.txt line %zu: %s", line_no, why ? why : "malformed");
    at = end + 1;
  }
  return 0;
}

/* Everything the host relies on, checked once so that the runner and the
 * plugin can trust the program; the device checks the rest at run time. */
static int from_files(drpai_program_t* p, const char* map, size_t map_len, char* err, size_t es) {
  if (parse_addr_map(map, map_len, p, err, es) != 0) return -1;
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f) {
    int r = drpai_file_region(f);
    if (r >= 0 && p->region[r].size != p->file[f].size)
      return fail(err, es, "addr_map.txt gives %s %u bytes but %s has %u", drpai_region_names[r],
                  p->region[r].size, drpai_file_names[f], p->file[f].size);
  }
  if (!p->region[DRPAI_REGION_DATA_IN].size || !p->region[DRPAI_REGION_DATA_OUT].size)
    return fail(err, es, "addr_map.txt: data_in and data_out must not be empty");
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int a = 0; a < DRPAI_REGION_COUNT; ++a) {
    const drpai_region_t* ra = &p->region[a];
    uint64_t end = (uint64_t)ra->addr + ra->size;
    if (end > 0xFC000000ull)
      return fail(err, es, "%s reaches into 0xFC000000-0xFFFFFFFF, which the driver reserves",
                  drpai_region_names[a]);
    for (int b = 0; b < a; ++b) {
      const drpai_region_t* rb = &p->region[b];
      if (ra->size && rb->size && ra->addr < rb->addr + (uint64_t)rb->size && rb->addr < end)
        return fail(err, es, "%s and %s overlap", drpai_region_names[a], drpai_region_names[b]);
    }
    if (ra->addr < lo) lo = ra->addr;
    if (end > hi) hi = end;
  }
  p->org_base = (uint32_t)lo;
  p->total = (uint32_t)(hi - lo);
  if (parse_info(&p->file[DRPAI_FILE_DRP_PARAM_INFO], &p->info, err, es) != 0) return -1;
  for (int kind = 0; kind < 2; ++kind) {
    uint32_t n = drpai_program_io_count(p, kind);
    if (n == 0) return fail(err, es, "drp_param_info.txt names no %s", kind ? "output" : "input");
    const drpai_region_t* r = &p->region[kind ? DRPAI_REGION_DATA_OUT : DRPAI_REGION_DATA_IN];
    for (uint32_t i = 0; i < n; ++i) {
      const drpai_info_io_t* io = drpai_program_io(p, kind, i);
      if (io->addr < r->addr || (uint64_t)io->addr + io->size > (uint64_t)r->addr + r->size)
        return fail(err, es, "%s '%s' lies outside %s", kind ? "output" : "input", io->name,
                    drpai_region_names[kind ? DRPAI_REGION_DATA_OUT : DRPAI_REGION_DATA_IN]);
    }
  }
  return 0;
}

/* ---- directories ------------------------------------------------------------- */

static int write_file(const char* dir, const char* name, const void* data, size_t size, char* err,
                      size_t es) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return fail(err, es, "%s/%s: path too long", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f) return fail(err, es, "%s: %s", path, strerror(errno));
  int ok = (size == 0 || fwrite(data, 1, size, f) == size);
  if (fclose(f) != 0) ok = 0;
  return ok ? 0 : fail(err, es, "%s: write failed", path);
}

int drpai_program_write_dir(const drpai_program_t* p, const char* dir, char* err, size_t es) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) return fail(err, es, "%s: %s", dir, strerror(errno));
  for (int f = 0; f < DRPAI_FILE_COUNT; ++f)
    if (write_file(dir, drpai_file_names[f], p->file[f].data, p->file[f].size, err, es) != 0) return -1;
  char* map = drpai_program_addr_map(p);
  if (!map) return fail(err, es, "out of memory");
  int rc = write_file(dir, DRPAI_ADDR_MAP_NAME, map, strlen(map), err, es);
  free(map);
  return rc;
}

static int read_file(const char* dir, const char* name, drpai_blob_t* out, char* err, size_t es) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return fail(err, es, "%s/%s: path too long", dir, name);
  FILE* f = fopen(path, "rb");
  if (!f) return fail(err, es, "%s: %s", path, strerror(errno));
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || (unsigned long)size > MAX_FILE_BYTES || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return fail(err, es, "%s: unreadable or larger than 1 GiB", path);
  }
  out->data = (uint8_t*)malloc(size ? (size_t)size : 1);
  out->size = (uint32_t)size;
  int ok = out->data && fread(out->data, 1, (size_t)size, f) == (size_t)size;
  fclose(f);
  return ok ? 0 : fail(err, es, "%s: read failed", path);
}

static int is_file(const char* dir, const char* name) {
  char path[4096];
  struct stat st;
  return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path) &&
         stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int drpai_program_read_dir(const char* dir, drpai_program_t* p, char* err, size_t es) {
  memset(p, 0, sizeof(*p));
  if (!is_file(dir, DRPAI_ADDR_MAP_NAME) || !is_file(dir, drpai_file_names[DRPAI_FILE_DRP_DESC]))
    return 1;
  drpai_blob_t map = {NULL, 0};
  int rc = 0;
  for (int f = 0; f < DRPAI_FILE_COUNT && rc == 0; ++f)
    rc = read_file(dir, drpai_file_names[f], &p->file[f], err, es);
  if (rc == 0) rc = read_file(dir, DRPAI_ADDR_MAP_NAME, &map, err, es);
  if (rc == 0) rc = from_files(p, (const char*)map.data, map.size, err, es);
  free(map.data);
  if (rc != 0) drpai_program_free(p);
  return rc;
}

/* ---- container -------------------------------------------------------------------
 *   0  "AXDS"   4 u32 version (1)   8 u32 entry count   12 u32 0
 *   entries: u32 name length (1..63), u32 data size, name, data
 * The blob ends exactly after the last entry. */

int drpai_program_pack(const drpai_program_t* p, uint8_t** out, size_t* out_size) {
  *out = NULL;
  *out_size = 0;
  char* map = drpai_program_addr_map(p);
  if (!map) return -1;
  const void* data[DRPAI_FILE_COUNT + 1];
  uint32_t sizes[DRPAI_FILE_COUNT + 1];
  const char* names[DRPAI_FILE_COUNT + 1];
  size_t total = CONTAINER_HEADER;
  for (int i = 0; i <= DRPAI_FILE_COUNT; ++i) {
    names[i] = i < DRPAI_FILE_COUNT ? drpai_file_names[i] : DRPAI_ADDR_MAP_NAME;
    data[i] = i < DRPAI_FILE_COUNT ? (const void*)p->file[i].data : (const void*)map;
    sizes[i] = i < DRPAI_FILE_COUNT ? p->file[i].size : (uint32_t)strlen(map);
    total += 8 + strlen(names[i]) + sizes[i];
  }
  uint8_t* b = (uint8_t*)malloc(total);
  if (!b) {
    free(map);
    return -1;
  }
  memcpy(b, CONTAINER_MAGIC, 4);
  drpai_put32(b + 4, CONTAINER_VERSION);
  drpai_put32(b + 8, DRPAI_FILE_COUNT + 1);
  drpai_put32(b + 12, 0);
  size_t at = CONTAINER_HEADER;
  for (int i = 0; i <= DRPAI_FILE_COUNT; ++i) {
    uint32_t n = (uint32_t)strlen(names[i]);
    drpai_put32(b + at, n);
    drpai_put32(b + at + 4, sizes[i]);
    memcpy(b + at + 8, names[i], n);
    if (sizes[i]) memcpy(b + at + 8 + n, data[i], sizes[i]);
    at += 8 + n + sizes[i];
  }
  free(map);
  *out = b;
  *out_size = total;
  return 0;
}

int drpai_program_unpack(const uint8_t* d, size_t size, drpai_program_t* p, char* err, size_t es) {
  memset(p, 0, sizeof(*p));
  if (size < 4 || memcmp(d, CONTAINER_MAGIC, 4) != 0) return 1;
  if (size < CONTAINER_HEADER) return fail(err, es, "truncated header (%zu bytes)", size);
  uint32_t version = drpai_get32(d + 4), count = drpai_get32(d + 8);
  if (version > CONTAINER_VERSION) return 2;
  if (version != CONTAINER_VERSION || drpai_get32(d + 12) != 0)
    return fail(err, es, "bad version %u or reserved word", version);
  if (count != DRPAI_FILE_COUNT + 1)
    return fail(err, es, "%u entries; a DRP-AI program has %d", count, DRPAI_FILE_COUNT + 1);
  const uint8_t* map = NULL;
  uint32_t map_len = 0;
  int seen[DRPAI_FILE_COUNT + 1] = {0};
  size_t at = CONTAINER_HEADER;
  int rc = 0;
  for (uint32_t e = 0; e < count && rc == 0; ++e) {
    if (size - at < 8) {
      rc = fail(err, es, "entry %u is truncated", e);
      break;
    }
    uint32_t n = drpai_get32(d + at), len = drpai_get32(d + at + 4);
    at += 8;
    if (n == 0 || n > 63 || n > size - at || len > MAX_FILE_BYTES || len > size - at - n) {
      rc = fail(err, es, "entry %u has a bad name length %u or size %u", e, n, len);
      break;
    }
    char name[64];
    memcpy(name, d + at, n);
    name[n] = '\0';
    int idx = -1;
    for (int i = 0; i < DRPAI_FILE_COUNT; ++i)
      if (strcmp(name, drpai_file_names[i]) == 0) idx = i;
    if (strcmp(name, DRPAI_ADDR_MAP_NAME) == 0) idx = DRPAI_FILE_COUNT;
    if (idx < 0 || seen[idx] || memchr(name, '\0', n)) {
      rc = fail(err, es, "entry %u: unknown or repeated name", e);
      break;
    }
    seen[idx] = 1;
    const uint8_t* body = d + at + n;
    if (idx == DRPAI_FILE_COUNT) {
      map = body;
      map_len = len;
    } else {
      p->file[idx].data = (uint8_t*)malloc(len ? len : 1);
      if (!p->file[idx].data) {
        rc = fail(err, es, "out of memory");
        break;
      }
      if (len) memcpy(p->file[idx].data, body, len);
      p->file[idx].size = len;
    }
    at += n + len;
  }
  if (rc == 0 && at != size) rc = fail(err, es, "%zu stray bytes after the last entry", size - at);
  if (rc == 0) rc = from_files(p, (const char*)map, map_len, err, es);
  if (rc != 0) drpai_program_free(p);
  return rc;
}

/* ---- report ------------------------------------------------------------------------ */

/* Entry i of a headered file, or NULL when the file does not hold it. */
static const uint8_t* entry(const drpai_blob_t* b, const char* magic, uint32_t entry_size, uint32_t i) {
  if (b->size < DRPAI_HEADER_BYTES || memcmp(b->data, magic, 4) != 0 || drpai_get16(b->data + 6) != entry_size ||
      i >= drpai_get32(b->data + 8) || (uint64_t)DRPAI_HEADER_BYTES + ((uint64_t)i + 1) * entry_size > b->size)
    return NULL;
  return b->data + DRPAI_HEADER_BYTES + (size_t)i * entry_size;
}

static const char* aimac_name(uint32_t op) {
  static const char* const names[] = {"?", "conv", "gemm", "maxpool", "avgpool", "table", "add", "mul", "concat"};
  return op <= DRPAI_AIMAC_OP_MAX ? names[op] : "?";
}

void drpai_program_report(const drpai_program_t* p, char* text, size_t size) {
  size_t at = 0;
  text[0] = '\0';
#define OUT(...)                                                                  \
  do {                                                                            \
    if (at < size) at += (size_t)snprintf(text + at, size - at, __VA_ARGS__);    \
  } while (0)
  for (uint32_t s = 0;; ++s) {
    const uint8_t* st = entry(&p->file[DRPAI_FILE_DRP_DESC], DRPAI_MAGIC_DRP_DESC, DRPAI_DRP_DESC_ENTRY, s);
    if (!st) break;
    uint32_t kind = drpai_get32(st), a = drpai_get32(st + 4), b = drpai_get32(st + 8);
    if (kind == DRPAI_STAGE_DRP) {
      const drpai_blob_t* prm = &p->file[DRPAI_FILE_DRP_PARAM];
      OUT("DRP     %-13s", drpai_lib_name(a));
      if (b <= prm->size && prm->size - b >= DRPAI_PARAM_BLOCK) {
        const uint8_t* blk = prm->data + b;
        if (a <= DRPAI_LIB_TRANSPOSE)
          OUT(" %ux%u -> %ux%u", drpai_get16(blk + DRPAI_P_IWIDTH), drpai_get16(blk + DRPAI_P_IHEIGHT),
              drpai_get16(blk + DRPAI_P_OWIDTH), drpai_get16(blk + DRPAI_P_OHEIGHT));
        else
          OUT(" %u bytes -> %u bytes", drpai_get32(blk + DRPAI_P_ICAP), drpai_get32(blk + DRPAI_P_OCAP));
      }
      OUT("\n");
      continue;
    }
    for (uint32_t l = a; kind == DRPAI_STAGE_AIMAC && l - a < b; ++l) {
      const uint8_t* d = entry(&p->file[DRPAI_FILE_AIMAC_DESC], DRPAI_MAGIC_AIMAC_DESC, DRPAI_AIMAC_DESC_ENTRY, l);
      const uint8_t* c = d ? entry(&p->file[DRPAI_FILE_AIMAC_CMD], DRPAI_MAGIC_AIMAC_CMD, DRPAI_AIMAC_CMD_ENTRY,
                                   drpai_get32(d + 12))
                           : NULL;
      if (!c) {
        OUT("AI-MAC  layer %u: damaged descriptor\n", l);
        break;
      }
      uint32_t op = drpai_get32(d);
      int32_t w[DRPAI_AIMAC_CMD_WORDS];
      for (uint32_t k = 0; k < DRPAI_AIMAC_CMD_WORDS; ++k) w[k] = drpai_geti32(c + 4 * k);
      OUT("AI-MAC  %-13s", aimac_name(op));
      if (op == DRPAI_AIMAC_GEMM)
        OUT(" %dx%d -> %dx%d int8", w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_N], w[DRPAI_C_COUT]);
      else if (op == DRPAI_AIMAC_LUT)
        OUT(" %u int8 values", drpai_get32(d + 20));
      else if (op == DRPAI_AIMAC_ADD || op == DRPAI_AIMAC_MUL)
        OUT(" %dx%dx%dx%d int8 %s %s", w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN],
            op == DRPAI_AIMAC_ADD ? "+" : "*",
            (w[DRPAI_C_FLAGS] & DRPAI_CF_B_PER_CHANNEL) ? "per-channel operand" : "same-shape operand");
      else if (op == DRPAI_AIMAC_CONCAT)
        OUT(" %dx%dx%dx%d -> channels %d..%d of %d", w[DRPAI_C_N], w[DRPAI_C_CIN], w[DRPAI_C_HIN], w[DRPAI_C_WIN],
            w[DRPAI_C_OFFSET], w[DRPAI_C_OFFSET] + w[DRPAI_C_CIN] - 1, w[DRPAI_C_COUT]);
      else
        OUT(" %dx%dx%dx%d -> %dx%dx%dx%d int8, kernel %dx%d, stride %dx%d", w[DRPAI_C_N], w[DRPAI_C_CIN],
            w[DRPAI_C_HIN], w[DRPAI_C_WIN], w[DRPAI_C_N], op == DRPAI_AIMAC_CONV ? w[DRPAI_C_COUT] : w[DRPAI_C_CIN],
            w[DRPAI_C_HOUT], w[DRPAI_C_WOUT], w[DRPAI_C_KH], w[DRPAI_C_KW], w[DRPAI_C_SH], w[DRPAI_C_SW]);
      /* A fused Relu/Clip shows as a clamp narrower than int8. */
      if (w[DRPAI_C_ACT_MIN] != -128 || w[DRPAI_C_ACT_MAX] != 127)
        OUT(", clamp %d..%d", w[DRPAI_C_ACT_MIN], w[DRPAI_C_ACT_MAX]);
      OUT("\n");
    }
  }
#undef OUT
  if (at >= size && size > 0) text[size - 1] = '\0';
}
