/*
 * The RZ/V2H DRP-AI driver's user interface, as Axle uses it: ioctl numbers,
 * argument structures and constants. Written from the published facts
 * (../shared/DESIGN.md section 6 and the driver manual), not copied from the
 * vendor header, so that the plugin, the emulator and the shim agree on one
 * definition whose sizes are checked at compile time below.
 */
#ifndef AXLE_DRPAI_UAPI_H_
#define AXLE_DRPAI_UAPI_H_

#include <stdint.h>

#define DRPAI_DEVICE_PATH "/dev/drpai0"

/* ioctl type 46 ('.'). The numbers are spelled out because they are the
 * binary contract; drpai_emu.c asserts them against _IOW/_IOR. */
#define DRPAI_IO_TYPE 46
#define DRPAI_ASSIGN 0x40102E00u         /* _IOW(46, 0, drpai_data_t) */
#define DRPAI_START 0x40102E01u          /* _IOW(46, 1, drpai_data_t), reads 10 entries */
#define DRPAI_RESET 0x00002E02u          /* _IO(46, 2) */
#define DRPAI_GET_STATUS 0x80882E03u     /* _IOR(46, 3, drpai_status_t) */
#define DRPAI_ASSIGN_PARAM 0x40182E06u   /* _IOW(46, 6, drpai_assign_param_t) */
#define DRPAI_PREPOST_CROP 0x40182E07u   /* _IOW(46, 7, drpai_crop_t) */
#define DRPAI_PREPOST_INADDR 0x41202E08u /* _IOW(46, 8, drpai_inout_t) */
#define DRPAI_GET_DRPAI_AREA 0x80102E0Bu /* _IOR(46, 11, drpai_data_t) */
#define DRPAI_SET_DRP_MAX_FREQ 0x40042E0Cu /* _IOW(46, 12, uint32_t) */
#define DRPAI_SET_DRPAI_FREQ 0x40042E0Du   /* _IOW(46, 13, uint32_t) */
#define DRPAI_SET_ADRCONV 0x40182E0Eu      /* _IOW(46, 14, drpai_adrconv_t) */

/* proc[] of DRPAI_START (Table 4-3). */
#define DRPAI_INDEX_NUM 10
#define DRPAI_INDEX_INPUT 0
#define DRPAI_INDEX_DRP_DESC 1
#define DRPAI_INDEX_DRP_CFG 2
#define DRPAI_INDEX_DRP_PARAM 3
#define DRPAI_INDEX_AIMAC_DESC 4
#define DRPAI_INDEX_WEIGHT 5
#define DRPAI_INDEX_OUTPUT 6
#define DRPAI_INDEX_AIMAC_CMD 7
#define DRPAI_INDEX_AIMAC_PARAM_DESC 8
#define DRPAI_INDEX_AIMAC_PARAM_CMD 9

/* drpai_status_t.status (Table 4-4) and .err (Table 4-5). */
#define DRPAI_STATUS_INIT 0
#define DRPAI_STATUS_IDLE 1
#define DRPAI_STATUS_RUN 2
#define DRPAI_ERRINFO_SUCCESS 0
#define DRPAI_ERRINFO_DRP_ERR (-1)
#define DRPAI_ERRINFO_AIMAC_ERR (-2)
#define DRPAI_ERRINFO_RESET (-3)

#define DRPAI_RESERVED_NUM 32
#define DRPAI_MAX_NODE_NAME 256

#define DRPAI_ADRCONV_MODE_REPLACE 0
#define DRPAI_ADRCONV_MODE_ADD 1
#define DRPAI_ADRCONV_MODE_DISABLE 0xFF

/* The kernel's ERESTART (85) is not exported to user space by every libc. */
#ifndef ERESTART
#define ERESTART 85
#endif

typedef struct drpai_data {
  uint64_t address;
  uint64_t size;
} drpai_data_t;

typedef struct drpai_status {
  uint32_t status;
  int32_t err;
  uint32_t reserved[DRPAI_RESERVED_NUM];
} drpai_status_t;

typedef struct drpai_assign_param {
  uint32_t info_size;
  drpai_data_t obj;
} drpai_assign_param_t;

typedef struct drpai_crop {
  uint16_t img_owidth;
  uint16_t img_oheight;
  uint16_t pos_x;
  uint16_t pos_y;
  drpai_data_t obj;
} drpai_crop_t;

typedef struct drpai_inout {
  char name[DRPAI_MAX_NODE_NAME];
  drpai_data_t data;
  drpai_data_t obj;
} drpai_inout_t;

typedef struct drpai_adrconv {
  uint32_t org_address;
  uint32_t size;
  uint64_t conv_address;
  uint8_t mode;
} drpai_adrconv_t;

_Static_assert(sizeof(drpai_data_t) == 16, "drpai_data_t is 16 bytes");
_Static_assert(sizeof(drpai_status_t) == 136, "drpai_status_t is 136 bytes");
_Static_assert(sizeof(drpai_assign_param_t) == 24, "drpai_assign_param_t is 24 bytes");
_Static_assert(sizeof(drpai_crop_t) == 24, "drpai_crop_t is 24 bytes");
_Static_assert(sizeof(drpai_inout_t) == 288, "drpai_inout_t is 288 bytes");
_Static_assert(sizeof(drpai_adrconv_t) == 24, "drpai_adrconv_t is 24 bytes");

/* Frequency formulas of SET_DRP_MAX_FREQ (mindiv 2..127) and SET_DRPAI_FREQ
 * (divfix 1..127), in kHz so that the integer results stay exact enough. */
#define DRPAI_MINDIV_MIN 2u
#define DRPAI_MINDIV_MAX 127u
#define DRPAI_MINDIV_DEFAULT 2u
#define DRPAI_DIVFIX_MIN 1u
#define DRPAI_DIVFIX_MAX 127u
#define DRPAI_DIVFIX_DEFAULT 1u
static inline uint32_t drpai_drp_freq_khz(uint32_t mindiv) { return 1260000u / (mindiv + 1u); }
static inline uint32_t drpai_aimac_freq_khz(uint32_t divfix) {
  return divfix <= 2u ? 1000000u : 1260000u / (divfix - 1u);
}

#endif /* AXLE_DRPAI_UAPI_H_ */
