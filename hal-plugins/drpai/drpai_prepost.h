/*
 * The prepost YAML of a DRP-AI translation (docs/drpai.md, "Pre- and
 * post-processing"): the camera input the DRP receives (input_to_pre, e.g.
 * "camera_data" YUY2 HWC uint8 [480, 640, 2]), the chain of DRP operations
 * that turns it into the model's input (crop, conv_yuv2rgb, resize_hwc,
 * imagescaler, transpose), and optional post-processing (softmax). Parsed
 * with libyaml into this plain description; the compiler turns it into DRP
 * stages.
 */
#ifndef AXLE_DRPAI_PREPOST_H_
#define AXLE_DRPAI_PREPOST_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_uapi.h"

enum { DRPAI_PP_YUY2 = 1, DRPAI_PP_RGB = 2, DRPAI_PP_BGR = 3, DRPAI_PP_GRAY = 4 };

#define DRPAI_PP_MAX_OPS 16

typedef struct drpai_pp_op_t {
  uint32_t lib;                 /* DRPAI_LIB_CROP, _YUV2RGB, _RESIZE, _SCALER, _TRANSPOSE, _SOFTMAX */
  uint32_t x, y, w, h;          /* crop window; w/h 0 = to the image's edge */
  uint32_t rgb_format;          /* conv_yuv2rgb: 0 RGB, 1 BGR, 2 GRAY */
  uint32_t ow, oh, alg;         /* resize_hwc: output size, 0 nearest / 1 bilinear */
  uint32_t nvalues;             /* imagescaler: entries of add/mul (1 = all channels) */
  float add[4], mul[4];
  uint32_t to_hwc;              /* transpose: 0 HWC->CHW, 1 CHW->HWC */
} drpai_pp_op_t;

typedef struct drpai_prepost_t {
  char input_name[DRPAI_MAX_NODE_NAME];
  uint32_t input_format;        /* DRPAI_PP_* */
  uint32_t input_h, input_w, input_c;
  char body_name[DRPAI_MAX_NODE_NAME]; /* the model input it feeds ("" = the only one) */
  uint32_t body_rank;
  int64_t body_shape[8];        /* rank 0 = not given */
  uint32_t pre_count, post_count;
  drpai_pp_op_t pre[DRPAI_PP_MAX_OPS];
  drpai_pp_op_t post[DRPAI_PP_MAX_OPS];
} drpai_prepost_t;

/* 0, or -1 with err naming the file, the key and the problem. */
int drpai_prepost_load(const char* path, drpai_prepost_t* pp, char* err, size_t err_size);
int drpai_prepost_parse(const char* text, size_t len, drpai_prepost_t* pp, char* err, size_t err_size);

#endif /* AXLE_DRPAI_PREPOST_H_ */
