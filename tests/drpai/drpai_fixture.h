/*
 * Shared helpers of the DRP-AI emulator tests: tiny hand-made programs in
 * Axle's object-file encoding, placed with the driver calls, and waiting on
 * a descriptor.
 */
#ifndef AXLE_TESTS_DRPAI_FIXTURE_H_
#define AXLE_TESTS_DRPAI_FIXTURE_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_emu.h"
#include "drpai_uapi.h"

/* The emulator's default DRP-AI memory area. */
#define FX_AREA_BASE 0x240000000ull
#define FX_AREA_SIZE 0x20000000ull

/* ASSIGN + write / read of a whole buffer; 0 or a negative errno. */
int fx_put(drpai_emu_file_t* f, uint64_t addr, const void* data, size_t n);
int fx_get(drpai_emu_file_t* f, uint64_t addr, void* data, size_t n);

/* A program that does nothing (no DRP stage): placed at base, proc filled.
 * broken = 1 damages drp_desc.bin so that START ends in a DRP error. */
void fx_trivial(drpai_emu_file_t* f, uint64_t base, int broken, drpai_data_t proc[DRPAI_INDEX_NUM]);

/* A crop + conv_yuv2rgb program on a w x h YUY2 image at base (16 MiB
 * page-aligned plus less than 1 MiB), with SET_ADRCONV mapping its DRP-AI
 * addresses there and its drp_param_info.txt imported; obj is drp_param.bin
 * for PREPOST_*. proc[INPUT] is the image (base + 0x1000), proc[OUTPUT] the
 * RGB result. The image input is named "camera_data". */
void fx_crop(drpai_emu_file_t* f, uint64_t base, uint32_t w, uint32_t h, drpai_data_t proc[DRPAI_INDEX_NUM],
             drpai_data_t* obj);

/* The same program with DRP-AI address org placed at physical base, as
 * the caller's address conversion (or none, when org == base) has it. */
void fx_crop_at(drpai_emu_file_t* f, uint32_t org, uint64_t base, uint32_t w, uint32_t h,
                drpai_data_t proc[DRPAI_INDEX_NUM], drpai_data_t* obj);

/* 1 when the descriptor turns readable within ms, else 0. */
int fx_readable(drpai_emu_file_t* f, int ms);

/* The seed's retry loop (manual 4.5.2) around an ioctl. */
int fx_ioctl_retry(drpai_emu_file_t* f, unsigned long req, void* arg);

#endif /* AXLE_TESTS_DRPAI_FIXTURE_H_ */
