/* drp_param_info.txt parsing and the two driver patches that use it. */
#include "drpai_paraminfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drpai_format.h"

static const char* const kLibNames[DRPAI_LIB_MAX + 1] = {
    NULL, "crop", "conv_yuv2rgb", "resize_hwc", "imagescaler", "transpose",
    "quantize", "dequantize", "softmax", "memcopy"};

uint32_t drpai_lib_from_name(const char* name) {
  for (uint32_t i = 1; i <= DRPAI_LIB_MAX; ++i)
    if (strcmp(kLibNames[i], name) == 0) return i;
  return 0;
}

const char* drpai_lib_name(uint32_t lib) { return lib >= 1 && lib <= DRPAI_LIB_MAX ? kLibNames[lib] : "?"; }

const char* drpai_dtype_name(int32_t dtype) {
  switch (dtype) {
    case DRPAI_DT_F32: return "float32";
    case DRPAI_DT_U8: return "uint8";
    case DRPAI_DT_I8: return "int8";
    default: return "?";
  }
}

static int32_t dtype_from_name(const char* s) {
  if (strcmp(s, "float32") == 0) return DRPAI_DT_F32;
  if (strcmp(s, "uint8") == 0) return DRPAI_DT_U8;
  if (strcmp(s, "int8") == 0) return DRPAI_DT_I8;
  return 0;
}

static uint64_t dtype_size(int32_t dtype) { return dtype == DRPAI_DT_F32 ? 4 : 1; }

void drpai_info_init(drpai_info_t* info) { memset(info, 0, sizeof(*info)); }

void drpai_info_free(drpai_info_t* info) {
  free(info->ops);
  drpai_info_init(info);
}

/* Decimal or 0x-hex, no sign, whole string, at most max. */
static int parse_uint(const char* s, uint64_t max, uint64_t* out) {
  int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* p = hex ? s + 2 : s;
  if (!*p) return -1;
  uint64_t v = 0;
  for (; *p; ++p) {
    unsigned d;
    if (*p >= '0' && *p <= '9')
      d = (unsigned)(*p - '0');
    else if (hex && *p >= 'a' && *p <= 'f')
      d = (unsigned)(*p - 'a' + 10);
    else if (hex && *p >= 'A' && *p <= 'F')
      d = (unsigned)(*p - 'A' + 10);
    else
      return -1;
    uint64_t base = hex ? 16 : 10;
    if (v > (max - d) / base) return -1;
    v = v * base + d;
  }
  *out = v;
  return 0;
}

typedef struct field_t {
  const char* key;
  const char* value;
} field_t;

#define MAX_FIELDS 16

/* Splits "k:v,k:v" in place (buf is a private copy). */
static int split_fields(char* buf, field_t* f, int* n) {
  *n = 0;
  for (char* tok = buf; tok;) {
    char* next = strchr(tok, ',');
    if (next) *next++ = '\0';
    if (*tok) {
      char* colon = strchr(tok, ':');
      if (!colon || *n == MAX_FIELDS) return -1;
      *colon = '\0';
      f[*n].key = tok;
      f[*n].value = colon + 1;
      ++*n;
    }
    tok = next;
  }
  return 0;
}

static const char* field(const field_t* f, int n, const char* key) {
  for (int i = 0; i < n; ++i)
    if (strcmp(f[i].key, key) == 0) return f[i].value;
  return NULL;
}

static int copy_name(char* dst, const char* src) {
  size_t len = strlen(src);
  if (len == 0 || len >= DRPAI_MAX_NODE_NAME) return -1;
  memcpy(dst, src, len + 1);
  return 0;
}

static int parse_op(drpai_info_t* info, const field_t* f, int n, const char** why) {
  uint64_t index, offset, size;
  const char *lib = field(f, n, "lib"), *off = field(f, n, "offset"), *sz = field(f, n, "size");
  const char* node = field(f, n, "node");
  if (parse_uint(f[0].value, UINT32_MAX, &index) != 0 || index != info->op_count) {
    *why = "op lines must be numbered 0, 1, 2, ... in order";
    return -EINVAL;
  }
  if (!lib || !drpai_lib_from_name(lib)) {
    *why = "op line names an unknown DRP library";
    return -EINVAL;
  }
  if (!off || parse_uint(off, UINT32_MAX, &offset) != 0 || offset % DRPAI_ALIGN ||
      !sz || parse_uint(sz, UINT32_MAX, &size) != 0 || size != DRPAI_PARAM_BLOCK) {
    *why = "op line needs a 64-byte aligned offset and size 0x80";
    return -EINVAL;
  }
  if (info->op_count == DRPAI_MAX_STAGES) {
    *why = "too many op lines";
    return -EINVAL;
  }
  if (info->op_count == info->op_cap) {
    uint32_t cap = info->op_cap ? info->op_cap * 2 : 16;
    drpai_info_op_t* ops = (drpai_info_op_t*)realloc(info->ops, cap * sizeof(*ops));
    if (!ops) return -ENOMEM;
    info->ops = ops;
    info->op_cap = cap;
  }
  drpai_info_op_t* op = &info->ops[info->op_count];
  memset(op, 0, sizeof(*op));
  op->lib = drpai_lib_from_name(lib);
  op->offset = (uint32_t)offset;
  if (node && copy_name(op->node, node) != 0) {
    *why = "op line has an empty or over-long node name";
    return -EINVAL;
  }
  ++info->op_count;
  return 0;
}

static int parse_shape(const char* s, drpai_info_io_t* io) {
  io->rank = 0;
  char buf[128];
  size_t len = strlen(s);
  if (len == 0 || len >= sizeof(buf)) return -1;
  memcpy(buf, s, len + 1);
  for (char* tok = buf; tok;) {
    char* next = strchr(tok, 'x');
    if (next) *next++ = '\0';
    uint64_t d;
    if (io->rank == DRPAI_INFO_MAX_RANK || parse_uint(tok, DRPAI_MAX_DIM, &d) != 0 || d == 0)
      return -1;
    io->shape[io->rank++] = (int64_t)d;
    tok = next;
  }
  return 0;
}

static int parse_io(drpai_info_t* info, const field_t* f, int n, const char** why) {
  drpai_info_io_t io;
  memset(&io, 0, sizeof(io));
  if (strcmp(f[0].value, "input") == 0)
    io.output = 0;
  else if (strcmp(f[0].value, "output") == 0)
    io.output = 1;
  else {
    *why = "io line must say io:input or io:output";
    return -EINVAL;
  }
  uint64_t index, addr, size;
  const char *idx = field(f, n, "index"), *name = field(f, n, "name"), *dt = field(f, n, "dtype");
  const char *shape = field(f, n, "shape"), *a = field(f, n, "addr"), *sz = field(f, n, "size");
  uint32_t same_kind = 0;
  for (uint32_t i = 0; i < info->io_count; ++i) same_kind += info->io[i].output == io.output;
  if (!idx || parse_uint(idx, UINT32_MAX, &index) != 0 || index != same_kind) {
    *why = "io lines of a kind must be numbered 0, 1, 2, ... in order";
    return -EINVAL;
  }
  if (!name || copy_name(io.name, name) != 0 || !dt || !(io.dtype = dtype_from_name(dt)) ||
      !shape || parse_shape(shape, &io) != 0) {
    *why = "io line needs a name, a dtype (uint8, int8, float32) and a shape like 1x3x224x224";
    return -EINVAL;
  }
  if (!a || parse_uint(a, UINT32_MAX, &addr) != 0 || addr % DRPAI_ALIGN || !sz ||
      parse_uint(sz, UINT32_MAX, &size) != 0) {
    *why = "io line needs a 64-byte aligned addr and a size";
    return -EINVAL;
  }
  uint64_t bytes = dtype_size(io.dtype);
  for (uint32_t d = 0; d < io.rank; ++d) bytes *= (uint64_t)io.shape[d];
  if (bytes != size || addr + size > 0x100000000ull) {
    *why = "io line size does not match its dtype and shape";
    return -EINVAL;
  }
  if (info->io_count == DRPAI_INFO_MAX_IO) {
    *why = "too many io lines";
    return -EINVAL;
  }
  io.index = (uint32_t)index;
  io.addr = (uint32_t)addr;
  io.size = (uint32_t)size;
  info->io[info->io_count++] = io;
  return 0;
}

int drpai_info_parse_line(drpai_info_t* info, const char* line, size_t len, const char** why) {
  static const char* unused;
  if (!why) why = &unused;
  *why = NULL;
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) --len;
  size_t start = 0;
  while (start < len && (line[start] == ' ' || line[start] == '\t')) ++start;
  if (start == len || line[start] == '#') return 0;
  char buf[DRPAI_INFO_MAX_LINE];
  if (len - start >= sizeof(buf)) {
    *why = "line longer than 1023 characters";
    return -EINVAL;
  }
  memcpy(buf, line + start, len - start);
  buf[len - start] = '\0';
  if (memchr(buf, '\0', len - start)) {
    *why = "NUL byte in a line";
    return -EINVAL;
  }
  field_t f[MAX_FIELDS];
  int n;
  if (split_fields(buf, f, &n) != 0 || n == 0) {
    *why = "a line is a comma-separated list of key:value fields";
    return -EINVAL;
  }
  if (strcmp(f[0].key, "op") == 0) return parse_op(info, f, n, why);
  if (strcmp(f[0].key, "io") == 0) return parse_io(info, f, n, why);
  *why = "a line starts with op: or io:";
  return -EINVAL;
}

/* ---- driver patches ------------------------------------------------------ */

static uint8_t* block(uint8_t* param, size_t param_size, const drpai_info_op_t* op) {
  if (op->offset > param_size || param_size - op->offset < DRPAI_PARAM_BLOCK) return NULL;
  return param + op->offset;
}

int drpai_info_crop(const drpai_info_t* info, uint8_t* param, size_t param_size,
                    const drpai_crop_t* crop) {
  uint32_t at = info->op_count;
  for (uint32_t i = 0; i < info->op_count; ++i)
    if (info->ops[i].lib == DRPAI_LIB_CROP) at = i;
  if (at == info->op_count) return -EINVAL; /* the program has no crop stage */
  uint8_t* b = block(param, param_size, &info->ops[at]);
  if (!b) return -EINVAL;
  uint32_t iw = drpai_get16(b + DRPAI_P_IWIDTH), ih = drpai_get16(b + DRPAI_P_IHEIGHT);
  uint32_t w = crop->img_owidth, h = crop->img_oheight, x = crop->pos_x, y = crop->pos_y;
  /* The manual's bounds (4.3.5), plus the window staying inside the image. */
  if (w < 1 || w > iw || h < 1 || h > ih || x > iw - 1 || y > ih - 1 || x + w > iw || y + h > ih)
    return -EINVAL;
  /* YUY2 shares chroma between pixel pairs: a window must not split one. */
  if (drpai_get16(b + DRPAI_P_CROP_FMT) == 1 && ((x & 1) || (w & 1))) return -EINVAL;
  drpai_put16(b + DRPAI_P_OWIDTH, (uint16_t)w);
  drpai_put16(b + DRPAI_P_OHEIGHT, (uint16_t)h);
  drpai_put16(b + DRPAI_P_CROP_X, (uint16_t)x);
  drpai_put16(b + DRPAI_P_CROP_Y, (uint16_t)y);
  for (uint32_t i = at + 1; i < info->op_count; ++i) {
    uint8_t* nb = block(param, param_size, &info->ops[i]);
    if (!nb) return -EINVAL;
    drpai_put16(nb + DRPAI_P_IWIDTH, (uint16_t)w);
    drpai_put16(nb + DRPAI_P_IHEIGHT, (uint16_t)h);
    if (!(drpai_get16(nb + DRPAI_P_FLAGS) & DRPAI_PF_SIZE_FOLLOWS)) break;
    drpai_put16(nb + DRPAI_P_OWIDTH, (uint16_t)w);
    drpai_put16(nb + DRPAI_P_OHEIGHT, (uint16_t)h);
  }
  return 0;
}

int drpai_info_inaddr(const drpai_info_t* info, uint8_t* param, size_t param_size,
                      const char* name, uint32_t org, uint64_t size) {
  const drpai_info_io_t* in = NULL;
  for (uint32_t i = 0; i < info->io_count; ++i)
    if (!info->io[i].output && strcmp(info->io[i].name, name) == 0) in = &info->io[i];
  if (!in || size < in->size || (uint64_t)org + in->size > 0x100000000ull) return -EINVAL;
  int patched = 0;
  for (uint32_t i = 0; i < info->op_count; ++i) {
    if (strcmp(info->ops[i].node, name) != 0) continue;
    uint8_t* b = block(param, param_size, &info->ops[i]);
    if (!b) return -EINVAL;
    drpai_put32(b + DRPAI_P_RADDR, org);
    patched = 1;
  }
  return patched ? 0 : -EINVAL;
}
