/* Prepost YAML parsing with libyaml's document API. */
#include "drpai_prepost.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "drpai_format.h"

typedef struct yctx_t {
  yaml_document_t* doc;
  char* err;
  size_t es;
} yctx_t;

static int fail(yctx_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(yctx_t* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, c->es, fmt, ap);
  va_end(ap);
  return -1;
}

static yaml_node_t* get(yctx_t* c, yaml_node_t* map, const char* key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t* p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; ++p) {
    yaml_node_t* k = yaml_document_get_node(c->doc, p->key);
    if (k && k->type == YAML_SCALAR_NODE && strcmp((const char*)k->data.scalar.value, key) == 0)
      return yaml_document_get_node(c->doc, p->value);
  }
  return NULL;
}

static uint32_t seq_len(yaml_node_t* n) {
  return n && n->type == YAML_SEQUENCE_NODE
             ? (uint32_t)(n->data.sequence.items.top - n->data.sequence.items.start)
             : 0;
}

static yaml_node_t* seq_at(yctx_t* c, yaml_node_t* n, uint32_t i) {
  return yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
}

static const char* scalar(yaml_node_t* n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char*)n->data.scalar.value : NULL;
}

static int get_string(yctx_t* c, yaml_node_t* map, const char* key, char* out, size_t size,
                      const char* where) {
  const char* s = scalar(get(c, map, key));
  if (!s) return fail(c, "%s: '%s' is missing or not a string", where, key);
  if (strlen(s) == 0 || strlen(s) >= size) return fail(c, "%s: '%s' is empty or too long", where, key);
  memcpy(out, s, strlen(s) + 1);
  return 0;
}

static int to_double(const char* s, double* out) {
  if (!s || !*s) return -1;
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* An integer parameter in [lo, hi]; *out keeps its default when absent. */
static int get_uint(yctx_t* c, yaml_node_t* map, const char* key, uint32_t lo, uint32_t hi,
                    uint32_t* out, const char* where) {
  yaml_node_t* n = get(c, map, key);
  if (!n) return 0;
  double v;
  if (to_double(scalar(n), &v) != 0 || v != floor(v) || v < lo || v > hi)
    return fail(c, "%s: %s must be an integer in %u..%u", where, key, lo, hi);
  *out = (uint32_t)v;
  return 0;
}

static int get_floats(yctx_t* c, yaml_node_t* map, const char* key, float* out, uint32_t* count,
                      const char* where) {
  yaml_node_t* n = get(c, map, key);
  if (!n) return 0;
  uint32_t len = seq_len(n);
  if (len < 1 || len > 4) return fail(c, "%s: %s must be a list of 1 to 4 numbers", where, key);
  for (uint32_t i = 0; i < len; ++i) {
    double v;
    if (to_double(scalar(seq_at(c, n, i)), &v) != 0) return fail(c, "%s: %s[%u] is not a number", where, key, i);
    out[i] = (float)v;
  }
  if (*count && *count != len) return fail(c, "%s: ADD_ARRAY and MUL_ARRAY differ in length", where);
  *count = len;
  return 0;
}

static int get_dims(yctx_t* c, yaml_node_t* n, int64_t* dims, uint32_t max, uint32_t* rank,
                    const char* where) {
  uint32_t len = seq_len(n);
  if (len < 1 || len > max) return fail(c, "%s: shape must be a list of 1 to %u sizes", where, max);
  for (uint32_t i = 0; i < len; ++i) {
    double v;
    if (to_double(scalar(seq_at(c, n, i)), &v) != 0 || v != floor(v) || v < 1 || v > DRPAI_MAX_DIM)
      return fail(c, "%s: shape[%u] must be an integer in 1..%d", where, i, DRPAI_MAX_DIM);
    dims[i] = (int64_t)v;
  }
  *rank = len;
  return 0;
}

/* The first entry of a top-level list of mappings (input_to_pre: - name: ...). */
static yaml_node_t* first(yctx_t* c, yaml_node_t* root, const char* key) {
  yaml_node_t* n = get(c, root, key);
  if (seq_len(n) == 0) return NULL;
  yaml_node_t* e = seq_at(c, n, 0);
  return e && e->type == YAML_MAPPING_NODE ? e : NULL;
}

static int parse_input(yctx_t* c, yaml_node_t* in, drpai_prepost_t* pp) {
  const char* where = "input_to_pre";
  char buf[32];
  if (get_string(c, in, "name", pp->input_name, sizeof(pp->input_name), where) != 0 ||
      get_string(c, in, "format", buf, sizeof(buf), where) != 0)
    return -1;
  if (strcmp(buf, "YUY2") == 0) pp->input_format = DRPAI_PP_YUY2;
  else if (strcmp(buf, "RGB") == 0) pp->input_format = DRPAI_PP_RGB;
  else if (strcmp(buf, "BGR") == 0) pp->input_format = DRPAI_PP_BGR;
  else if (strcmp(buf, "GRAY") == 0) pp->input_format = DRPAI_PP_GRAY;
  else return fail(c, "%s: format '%s' is not YUY2, RGB, BGR or GRAY", where, buf);
  if (get_string(c, in, "order", buf, sizeof(buf), where) != 0) return -1;
  if (strcmp(buf, "HWC") != 0) return fail(c, "%s: order must be HWC (the camera's layout)", where);
  if (get_string(c, in, "type", buf, sizeof(buf), where) != 0) return -1;
  if (strcmp(buf, "uint8") != 0) return fail(c, "%s: type must be uint8", where);
  int64_t dims[3];
  uint32_t rank;
  if (get_dims(c, get(c, in, "shape"), dims, 3, &rank, where) != 0) return -1;
  if (rank != 3) return fail(c, "%s: shape must be [height, width, channels]", where);
  uint32_t want = pp->input_format == DRPAI_PP_YUY2 ? 2 : pp->input_format == DRPAI_PP_GRAY ? 1 : 3;
  if (dims[2] != want) return fail(c, "%s: %s has %u bytes per pixel, not %lld", where, buf, want, (long long)dims[2]);
  if (pp->input_format == DRPAI_PP_YUY2 && dims[1] % 2)
    return fail(c, "%s: a YUY2 image has an even width", where);
  pp->input_h = (uint32_t)dims[0];
  pp->input_w = (uint32_t)dims[1];
  pp->input_c = (uint32_t)dims[2];
  return 0;
}

static int parse_op(yctx_t* c, yaml_node_t* n, int post, drpai_pp_op_t* op, uint32_t index) {
  char where[64];
  snprintf(where, sizeof(where), "%s operation %u", post ? "postprocess" : "preprocess", index);
  const char* name = scalar(get(c, n, "op"));
  if (!name) return fail(c, "%s: 'op' is missing", where);
  yaml_node_t* param = get(c, n, "param");
  memset(op, 0, sizeof(*op));
  if (!post && strcmp(name, "crop") == 0) {
    op->lib = DRPAI_LIB_CROP;
    return get_uint(c, param, "CROP_POS_X", 0, DRPAI_MAX_DIM, &op->x, where) ||
           get_uint(c, param, "CROP_POS_Y", 0, DRPAI_MAX_DIM, &op->y, where) ||
           get_uint(c, param, "CROP_WIDTH", 1, DRPAI_MAX_DIM, &op->w, where) ||
           get_uint(c, param, "CROP_HEIGHT", 1, DRPAI_MAX_DIM, &op->h, where);
  }
  if (!post && strcmp(name, "conv_yuv2rgb") == 0) {
    op->lib = DRPAI_LIB_YUV2RGB;
    return get_uint(c, param, "DOUT_RGB_FORMAT", 0, 2, &op->rgb_format, where);
  }
  if (!post && strcmp(name, "resize_hwc") == 0) {
    op->lib = DRPAI_LIB_RESIZE;
    op->alg = 1;
    if (get_uint(c, param, "RESIZE_ALG", 0, 1, &op->alg, where) ||
        get_uint(c, param, "RESIZE_WIDTH", 1, DRPAI_MAX_DIM, &op->ow, where) ||
        get_uint(c, param, "RESIZE_HEIGHT", 1, DRPAI_MAX_DIM, &op->oh, where))
      return -1;
    yaml_node_t* shape = get(c, n, "shape_out");
    if (shape) {
      int64_t d[3];
      uint32_t rank;
      if (get_dims(c, shape, d, 3, &rank, where) != 0) return -1;
      if (rank < 2) return fail(c, "%s: shape_out is [height, width(, channels)]", where);
      op->oh = (uint32_t)d[0];
      op->ow = (uint32_t)d[1];
    }
    if (!op->ow || !op->oh) return fail(c, "%s: resize_hwc needs RESIZE_WIDTH and RESIZE_HEIGHT", where);
    return 0;
  }
  if (!post && strcmp(name, "imagescaler") == 0) {
    op->lib = DRPAI_LIB_SCALER;
    if (get_floats(c, param, "ADD_ARRAY", op->add, &op->nvalues, where) ||
        get_floats(c, param, "MUL_ARRAY", op->mul, &op->nvalues, where))
      return -1;
    if (!op->nvalues) return fail(c, "%s: imagescaler needs ADD_ARRAY and MUL_ARRAY", where);
    return 0;
  }
  if (!post && strcmp(name, "transpose") == 0) {
    op->lib = DRPAI_LIB_TRANSPOSE;
    return get_uint(c, param, "IS_CHW2HWC", 0, 1, &op->to_hwc, where);
  }
  if (post && strcmp(name, "softmax") == 0) {
    op->lib = DRPAI_LIB_SOFTMAX;
    return 0;
  }
  return fail(c, "%s: '%s' is not a supported %s operation", where, name,
              post ? "post-processing (softmax)"
                   : "pre-processing (crop, conv_yuv2rgb, resize_hwc, imagescaler, transpose)");
}

static int parse_ops(yctx_t* c, yaml_node_t* root, const char* key, int post, drpai_pp_op_t* ops,
                     uint32_t* count) {
  yaml_node_t* block = first(c, root, key);
  *count = 0;
  if (!block) return 0;
  yaml_node_t* list = get(c, block, "operations");
  uint32_t n = seq_len(list);
  if (n > DRPAI_PP_MAX_OPS) return fail(c, "%s: more than %d operations", key, DRPAI_PP_MAX_OPS);
  for (uint32_t i = 0; i < n; ++i)
    if (parse_op(c, seq_at(c, list, i), post, &ops[i], i) != 0) return -1;
  *count = n;
  return 0;
}

static int parse_root(yctx_t* c, yaml_node_t* root, drpai_prepost_t* pp) {
  if (!root || root->type != YAML_MAPPING_NODE) return fail(c, "the document is not a mapping");
  yaml_node_t* in = first(c, root, "input_to_pre");
  if (!in) return fail(c, "input_to_pre: a list with the camera input is required");
  if (parse_input(c, in, pp) != 0) return -1;
  yaml_node_t* body = first(c, root, "input_to_body");
  if (body) {
    const char* name = scalar(get(c, body, "name"));
    if (name && (strlen(name) == 0 || strlen(name) >= sizeof(pp->body_name)))
      return fail(c, "input_to_body: bad name");
    if (name) memcpy(pp->body_name, name, strlen(name) + 1);
    yaml_node_t* shape = get(c, body, "shape");
    if (shape && get_dims(c, shape, pp->body_shape, 8, &pp->body_rank, "input_to_body") != 0) return -1;
  }
  if (parse_ops(c, root, "preprocess", 0, pp->pre, &pp->pre_count) != 0 ||
      parse_ops(c, root, "postprocess", 1, pp->post, &pp->post_count) != 0)
    return -1;
  uint32_t crops = 0;
  for (uint32_t i = 0; i < pp->pre_count; ++i) crops += pp->pre[i].lib == DRPAI_LIB_CROP;
  /* PREPOST_CROP patches one crop, and must have a stage after it. */
  if (crops > 1) return fail(c, "preprocess: only one crop is allowed");
  if (crops && pp->pre[pp->pre_count - 1].lib == DRPAI_LIB_CROP)
    return fail(c, "preprocess: crop must be followed by another operation");
  return 0;
}

int drpai_prepost_parse(const char* text, size_t len, drpai_prepost_t* pp, char* err, size_t es) {
  memset(pp, 0, sizeof(*pp));
  yaml_parser_t parser;
  yaml_document_t doc;
  yctx_t c = {&doc, err, es};
  if (!yaml_parser_initialize(&parser)) return fail(&c, "out of memory");
  yaml_parser_set_input_string(&parser, (const unsigned char*)text, len);
  int rc;
  if (!yaml_parser_load(&parser, &doc)) {
    rc = fail(&c, "line %zu: %s", parser.problem_mark.line + 1,
              parser.problem ? parser.problem : "not YAML");
  } else {
    rc = parse_root(&c, yaml_document_get_root_node(&doc), pp);
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&parser);
  return rc;
}

int drpai_prepost_load(const char* path, drpai_prepost_t* pp, char* err, size_t es) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    snprintf(err, es, "%s: %s", path, strerror(errno));
    return -1;
  }
  char* text = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size >= 0 && size <= (1 << 20) && fseek(f, 0, SEEK_SET) == 0) {
    text = (char*)malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
      free(text);
      text = NULL;
    }
  }
  fclose(f);
  if (!text) {
    snprintf(err, es, "%s: unreadable or larger than 1 MiB", path);
    return -1;
  }
  char why[384];
  int rc = drpai_prepost_parse(text, (size_t)size, pp, why, sizeof(why));
  free(text);
  if (rc) snprintf(err, es, "%s: %s", path, why);
  return rc;
}
