/*
 * Axle's encoding of the DRP-AI object files. The vendor's formats are
 * proprietary and unpublished, so Axle defines its own; docs/drpai.md is the
 * normative description and this header its C transcription. Everything is
 * little-endian and read byte by byte, so the host's endianness and struct
 * padding never matter. Addresses inside the files are 32-bit DRP-AI
 * addresses (the ones addr_map.txt lists); the hardware translates them with
 * the SET_ADRCONV table when one is enabled.
 */
#ifndef AXLE_DRPAI_FORMAT_H_
#define AXLE_DRPAI_FORMAT_H_

#include <stdint.h>
#include <string.h>

/* ---- little-endian access ------------------------------------------------ */

static inline uint16_t drpai_get16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t drpai_get32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline int32_t drpai_geti32(const uint8_t* p) { return (int32_t)drpai_get32(p); }
static inline float drpai_getf32(const uint8_t* p) {
  uint32_t u = drpai_get32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline void drpai_put16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void drpai_put32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline void drpai_putf32(uint8_t* p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  drpai_put32(p, u);
}

/* ---- the object-file set ------------------------------------------------- */

enum {
  DRPAI_FILE_AIMAC_DESC,
  DRPAI_FILE_AIMAC_CMD,
  DRPAI_FILE_AIMAC_PARAM_DESC,
  DRPAI_FILE_AIMAC_PARAM_CMD,
  DRPAI_FILE_DRP_DESC,
  DRPAI_FILE_DRP_PARAM,
  DRPAI_FILE_DRP_PARAM_INFO, /* read by the driver, never placed in memory */
  DRPAI_FILE_WEIGHT,
  DRPAI_FILE_DRPCFG,
  DRPAI_FILE_COUNT
};

/* Regions of addr_map.txt, in the order they are laid out. */
enum {
  DRPAI_REGION_DATA_IN,
  DRPAI_REGION_DATA_OUT,
  DRPAI_REGION_WORK,
  DRPAI_REGION_DRP_CONFIG,
  DRPAI_REGION_DRP_DESC,
  DRPAI_REGION_DRP_PARAM,
  DRPAI_REGION_AIMAC_DESC,
  DRPAI_REGION_AIMAC_CMD,
  DRPAI_REGION_AIMAC_PARAM_DESC,
  DRPAI_REGION_AIMAC_PARAM_CMD,
  DRPAI_REGION_WEIGHT,
  DRPAI_REGION_COUNT
};

#define DRPAI_ALIGN 64u
/* ADRCONV pages are 16 MiB: the lower 24 bits of an address survive
 * translation. */
#define DRPAI_PAGE_SHIFT 24u
#define DRPAI_PAGE_MASK 0xFFFFFFu

/* Binary files other than drp_param.bin and weight.dat start with this
 * 32-byte header:
 *   0  char[4] magic     4  u16 version (1)   6  u16 entry_size
 *   8  u32 count         12 u32 word[5]        (file-specific, else 0)
 * followed by count entries of entry_size bytes, and nothing else. */
#define DRPAI_HEADER_BYTES 32u
#define DRPAI_FORMAT_VERSION 1u
#define DRPAI_MAGIC_DRPCFG "AXDC"
#define DRPAI_MAGIC_DRP_DESC "AXDD"
#define DRPAI_MAGIC_AIMAC_DESC "AXAD"
#define DRPAI_MAGIC_AIMAC_CMD "AXAC"
#define DRPAI_MAGIC_PARAM_DESC "AXPD"
#define DRPAI_MAGIC_PARAM_CMD "AXPC"

/* drpcfg.mem: entries are u32 DRP library ids the program configures; a DRP
 * stage whose library is not configured is a DRP error. */
#define DRPAI_DRPCFG_ENTRY 4u

/* drp_desc.bin: header words 0..3 = data_in address, data_in size,
 * data_out address, data_out size (what START's proc[INPUT]/proc[OUTPUT]
 * relocate). Entries (16 B): u32 kind, u32 a, u32 b, u32 0.
 *   kind 1 (DRP stage):   a = library id, b = byte offset of its parameter
 *                         block in drp_param.bin
 *   kind 2 (AI-MAC run):  a = first aimac_desc layer, b = layer count */
#define DRPAI_DRP_DESC_ENTRY 16u
enum { DRPAI_STAGE_DRP = 1, DRPAI_STAGE_AIMAC = 2 };

/* DRP libraries (circuits). */
enum {
  DRPAI_LIB_CROP = 1,
  DRPAI_LIB_YUV2RGB = 2,
  DRPAI_LIB_RESIZE = 3,
  DRPAI_LIB_SCALER = 4,
  DRPAI_LIB_TRANSPOSE = 5,
  DRPAI_LIB_QUANTIZE = 6,
  DRPAI_LIB_DEQUANTIZE = 7,
  DRPAI_LIB_SOFTMAX = 8,
  DRPAI_LIB_MEMCOPY = 9,
  DRPAI_LIB_MAX = 9
};

/* drp_param.bin: parameter blocks of DRPAI_PARAM_BLOCK bytes, one per DRP
 * stage, no header. Common prefix: */
#define DRPAI_PARAM_BLOCK 128u
#define DRPAI_P_LIB 0        /* u32 */
#define DRPAI_P_RADDR 4      /* u32 input address */
#define DRPAI_P_WADDR 8      /* u32 output address */
#define DRPAI_P_IWIDTH 12    /* u16 IMG_IWIDTH */
#define DRPAI_P_IHEIGHT 14   /* u16 IMG_IHEIGHT */
#define DRPAI_P_OWIDTH 16    /* u16 IMG_OWIDTH */
#define DRPAI_P_OHEIGHT 18   /* u16 IMG_OHEIGHT */
#define DRPAI_P_ICH 20       /* u16 elements per input pixel */
#define DRPAI_P_FLAGS 22     /* u16 DRPAI_PF_* */
#define DRPAI_P_ICAP 24      /* u32 bytes readable at raddr */
#define DRPAI_P_OCAP 28      /* u32 bytes writable at waddr */
#define DRPAI_P_ARGS 32      /* library-specific fields start here */
#define DRPAI_PF_SRC_INPUT 0x1u   /* raddr lies in data_in: START's proc[INPUT] relocates it */
#define DRPAI_PF_DST_OUTPUT 0x2u  /* waddr lies in data_out: proc[OUTPUT] relocates it */
#define DRPAI_PF_SIZE_FOLLOWS 0x4u /* output size = input size (PREPOST_CROP propagates) */
/* crop */
#define DRPAI_P_CROP_X 32    /* u16 CROP_POS_X */
#define DRPAI_P_CROP_Y 34    /* u16 CROP_POS_Y */
#define DRPAI_P_CROP_FMT 36  /* u16 0 = HWC elements, 1 = YUY2 */
#define DRPAI_P_CROP_ELEM 38 /* u16 bytes per element */
/* conv_yuv2rgb */
#define DRPAI_P_RGB_FMT 32   /* u16 0 RGB, 1 BGR, 2 GRAY */
/* resize_hwc */
#define DRPAI_P_RESIZE_ALG 32 /* u16 0 nearest, 1 bilinear */
/* imagescaler: out = (in + ADD[c]) * MUL[c], float32 out, c < 4 */
#define DRPAI_P_SCALER_TYPE 32 /* u16 input 0 = uint8, 1 = float32 */
#define DRPAI_P_SCALER_ADD 36  /* f32[4] */
#define DRPAI_P_SCALER_MUL 52  /* f32[4] */
/* transpose */
#define DRPAI_P_TR_ELEM 32   /* u16 bytes per element */
#define DRPAI_P_TR_DIR 34    /* u16 0 HWC->CHW, 1 CHW->HWC */
/* quantize (f32 -> i8) / dequantize (i8 -> f32) */
#define DRPAI_P_Q_COUNT 32   /* u32 elements */
#define DRPAI_P_Q_SCALE 36   /* f32 */
#define DRPAI_P_Q_ZERO 40    /* i32, int8 domain */
/* softmax over float32 [outer, axis, inner] */
#define DRPAI_P_SM_OUTER 32
#define DRPAI_P_SM_AXIS 36
#define DRPAI_P_SM_INNER 40
/* memcopy */
#define DRPAI_P_COPY_BYTES 32

/* aimac_desc.bin: one entry (32 B) per AI-MAC layer:
 *   u32 op, u32 in_addr, u32 out_addr, u32 cmd_index, u32 param_index
 *   (0xFFFFFFFF = none), u32 in_bytes, u32 out_bytes, u32 in2_addr
 * in2_addr is the second operand of ADD and MUL (0 for other layers). */
#define DRPAI_AIMAC_DESC_ENTRY 32u
#define DRPAI_NO_PARAM 0xFFFFFFFFu
enum {
  DRPAI_AIMAC_CONV = 1,
  DRPAI_AIMAC_GEMM = 2,
  DRPAI_AIMAC_MAXPOOL = 3,
  DRPAI_AIMAC_AVGPOOL = 4,
  DRPAI_AIMAC_LUT = 5,
  DRPAI_AIMAC_ADD = 6,    /* y = requant((a - a_zp) * MULT + (b - b_zp) * B_MULT) */
  DRPAI_AIMAC_MUL = 7,    /* y = requant((a - a_zp) * (b - b_zp) * MULT) */
  DRPAI_AIMAC_CONCAT = 8, /* one input's channels into the output at OFFSET */
  DRPAI_AIMAC_OP_MAX = 8
};

/* aimac_cmd.bin: one geometry/arithmetic record (24 x i32) per layer. */
#define DRPAI_AIMAC_CMD_WORDS 24u
#define DRPAI_AIMAC_CMD_ENTRY (DRPAI_AIMAC_CMD_WORDS * 4u)
enum {
  DRPAI_C_N, DRPAI_C_CIN, DRPAI_C_HIN, DRPAI_C_WIN, DRPAI_C_COUT, DRPAI_C_HOUT, DRPAI_C_WOUT,
  DRPAI_C_KH, DRPAI_C_KW, DRPAI_C_SH, DRPAI_C_SW, DRPAI_C_PT, DRPAI_C_PL, DRPAI_C_DH, DRPAI_C_DW,
  DRPAI_C_GROUP, DRPAI_C_IN_ZP, DRPAI_C_OUT_ZP, DRPAI_C_ACT_MIN, DRPAI_C_ACT_MAX,
  DRPAI_C_MULT, DRPAI_C_SHIFT, DRPAI_C_FLAGS, DRPAI_C_RESERVED
};
#define DRPAI_CF_COUNT_PAD 0x1 /* average pool counts padded taps */
/* ADD / MUL: a and y are N x CIN x HIN x WIN; b is the same, or with
 * DRPAI_CF_B_PER_CHANNEL one value per channel (CIN bytes), broadcast over
 * N, H and W. Both results are rounded with SHIFT and clamped to
 * ACT_MIN..ACT_MAX after adding OUT_ZP. The words a window does not use: */
#define DRPAI_C_B_ZP DRPAI_C_KH
#define DRPAI_C_B_MULT DRPAI_C_KW
#define DRPAI_CF_B_PER_CHANNEL 0x2
/* CONCAT: the input is N x CIN x HIN x WIN, the output N x COUT x HIN x WIN
 * (WIN = 1 for a flattened inner extent); the input fills output channels
 * OFFSET .. OFFSET + CIN - 1, requantized with IN_ZP, MULT, SHIFT, OUT_ZP.
 * A concatenation of k inputs is k layers writing one output. */
#define DRPAI_C_OFFSET DRPAI_C_PT

/* aimac_param_desc.bin: one entry (32 B) per parameterised layer:
 *   u32 weight_addr, u32 weight_bytes, u32 bias_addr, u32 bias_bytes,
 *   u32 requant_addr, u32 requant_bytes, u32 channels, u32 0
 * weights int8, biases int32, requant {i32 multiplier, i32 shift} per output
 * channel; a LUT layer has a 256-byte int8 table as its "weights". */
#define DRPAI_PARAM_DESC_ENTRY 32u

/* aimac_param_cmd.bin: parameter loads (16 B): u32 layer, u32 src_addr,
 * u32 bytes, u32 0. A layer may only read parameter bytes that a load for
 * that layer brought into the AI-MAC; anything else is an AI-MAC error. */
#define DRPAI_PARAM_CMD_ENTRY 16u

/* Limits the hardware model enforces on descriptors (bounded work). */
#define DRPAI_MAX_STAGES 4096u
#define DRPAI_MAX_LAYERS 4096u
#define DRPAI_MAX_DIM 65535
#define DRPAI_MAX_LAYER_MACS (1ull << 32)

#endif /* AXLE_DRPAI_FORMAT_H_ */
