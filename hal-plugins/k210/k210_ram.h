/*
 * KPU RAM: 2 MiB of 64-byte rows (at 0x40600000 on the chip) holding the
 * feature maps layers read and write. A feature map's place is described by
 * the layer words: a base row, the rows between channel groups
 * (channel_switch_addr), the rows per image line (row_switch_addr) and the
 * channels sharing a row (coef_group / wb_group: 4 channels of <= 16 bytes,
 * 2 of <= 32 bytes, or 1 channel spread over ceil(width / 64) rows).
 *
 * Channel c, line y starts at byte
 *   64 * (base + (c / groups) * channel_switch + y * row_switch) + (c % groups) * (64 / groups).
 */
#ifndef AXLE_K210_RAM_H_
#define AXLE_K210_RAM_H_

#include <stddef.h>
#include <stdint.h>

#define K210_RAM_BYTES (2u << 20)
#define K210_RAM_ROW_BYTES 64u
#define K210_RAM_ROWS (K210_RAM_BYTES / K210_RAM_ROW_BYTES)

typedef struct k210_fmap_t {
  uint32_t base_row;
  uint32_t channel_switch; /* rows from one channel group to the next */
  uint32_t row_switch;     /* rows from one image line to the next */
  uint32_t groups;         /* channels per row: 1, 2 or 4 */
  uint32_t width, height, channels;
} k210_fmap_t;

/* The layout the SDK and nncase give a width-w map: 4 channels per row up to
 * w = 16, 2 up to 32, else one channel over ceil(w / 64) rows per line. */
k210_fmap_t k210_fmap_for_shape(uint32_t base_row, uint32_t width, uint32_t height,
                                uint32_t channels);
/* Rows from base_row through the last row the map touches. */
uint32_t k210_fmap_rows(const k210_fmap_t* m);
/* NULL when the description is consistent and lies inside KPU RAM, else why
 * (for messages). */
const char* k210_fmap_check(const k210_fmap_t* m);
/* Byte offset in KPU RAM of channel c, line y. */
size_t k210_fmap_line(const k210_fmap_t* m, uint32_t c, uint32_t y);
/* Copies between KPU RAM and a dense NCHW (C x H x W) u8 array. Bytes of a
 * row beyond the map's lines are left alone. The map must have passed
 * k210_fmap_check. */
void k210_fmap_load(const uint8_t* ram, const k210_fmap_t* m, uint8_t* nchw);
void k210_fmap_store(uint8_t* ram, const k210_fmap_t* m, const uint8_t* nchw);

#endif /* AXLE_K210_RAM_H_ */
