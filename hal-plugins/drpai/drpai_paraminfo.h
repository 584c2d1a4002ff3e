/*
 * drp_param_info.txt: the text file the driver imports with ASSIGN_PARAM +
 * write, one record per line (Axle's encoding, docs/drpai.md):
 *
 *   # comment
 *   io:input,index:0,name:camera_data,dtype:uint8,shape:480x640x2,addr:0x0,size:0x96000
 *   io:output,index:0,name:scores,dtype:float32,shape:1x10,addr:0x96000,size:0x40
 *   op:0,lib:crop,offset:0x0,size:0x80,node:camera_data
 *
 * "op" lines locate each DRP stage's parameter block in drp_param.bin (what
 * PREPOST_CROP and PREPOST_INADDR patch); "io" lines name the program's
 * inputs and outputs (what PREPOST_INADDR matches, and what a host needs to
 * feed and read the program). Parsed one line at a time because the driver
 * receives the file in write() chunks of any size.
 */
#ifndef AXLE_DRPAI_PARAMINFO_H_
#define AXLE_DRPAI_PARAMINFO_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_uapi.h"

#define DRPAI_INFO_MAX_LINE 1024u
#define DRPAI_INFO_MAX_IO 64u
#define DRPAI_INFO_MAX_RANK 8u

/* Element types of io lines (ONNX numbering, as in hal.h). */
enum { DRPAI_DT_F32 = 1, DRPAI_DT_U8 = 2, DRPAI_DT_I8 = 3 };

typedef struct drpai_info_op_t {
  uint32_t lib;                    /* DRPAI_LIB_* */
  uint32_t offset;                 /* of the parameter block in drp_param.bin */
  char node[DRPAI_MAX_NODE_NAME];  /* input name the stage reads, or "" */
} drpai_info_op_t;

typedef struct drpai_info_io_t {
  int output;                      /* 0 input, 1 output */
  uint32_t index;
  char name[DRPAI_MAX_NODE_NAME];
  int32_t dtype;                   /* DRPAI_DT_* */
  uint32_t rank;
  int64_t shape[DRPAI_INFO_MAX_RANK];
  uint32_t addr;                   /* DRP-AI address inside data_in / data_out */
  uint32_t size;                   /* bytes */
} drpai_info_io_t;

typedef struct drpai_info_t {
  drpai_info_op_t* ops;
  uint32_t op_count, op_cap;
  drpai_info_io_t io[DRPAI_INFO_MAX_IO];
  uint32_t io_count;
} drpai_info_t;

void drpai_info_init(drpai_info_t* info);
void drpai_info_free(drpai_info_t* info);
/* One line without its newline. Blank lines and '#' comments are skipped.
 * Returns 0, -EINVAL (malformed; *why names the problem) or -ENOMEM. */
int drpai_info_parse_line(drpai_info_t* info, const char* line, size_t len, const char** why);
/* Library id of a name ("crop") or 0; and the reverse. */
uint32_t drpai_lib_from_name(const char* name);
const char* drpai_lib_name(uint32_t lib);
const char* drpai_dtype_name(int32_t dtype);

/* PREPOST_CROP on drp_param.bin (param, param_size bytes): checks the window
 * against the crop stage's input size (1 <= width <= input width,
 * 0 <= pos_x <= input width - 1, the window inside the image, even x and
 * width for YUY2), writes it, and propagates the cropped size to the stages
 * that follow up to the first one that sets its own output size. 0 or
 * -EINVAL. */
int drpai_info_crop(const drpai_info_t* info, uint8_t* param, size_t param_size,
                    const drpai_crop_t* crop);
/* PREPOST_INADDR: points every stage that reads input `name` at DRP-AI
 * address org. 0 or -EINVAL (no such input, buffer smaller than the input). */
int drpai_info_inaddr(const drpai_info_t* info, uint8_t* param, size_t param_size,
                      const char* name, uint32_t org, uint64_t size);

#endif /* AXLE_DRPAI_PARAMINFO_H_ */
