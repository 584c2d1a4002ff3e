/*
 * The DRP-AI address-conversion table (SET_ADRCONV): 256 entries, one per
 * 16 MiB page of the 32-bit DRP-AI address space, each naming a 16 MiB page
 * of the 40-bit physical space. Pure data structure, no locking: the owner
 * (the emulator's per-descriptor state) serialises access.
 */
#ifndef AXLE_DRPAI_ADRCONV_H_
#define AXLE_DRPAI_ADRCONV_H_

#include <stdint.h>

#include "drpai_uapi.h"

#define DRPAI_ADRCONV_PAGES 256u
/* Physical addresses are 40 bits wide. */
#define DRPAI_PHYS_LIMIT (1ull << 40)
/* The driver keeps 0xFC000000-0xFFFFFFFF of the DRP-AI space for itself. */
#define DRPAI_RESERVED_ORG 0xFC000000ull

typedef struct drpai_adrconv_range_t {
  uint32_t org;
  uint32_t size;
  uint64_t conv;
} drpai_adrconv_range_t;

typedef struct drpai_adrconv_table_t {
  int enabled;
  uint8_t valid[DRPAI_ADRCONV_PAGES];
  uint32_t conv_page[DRPAI_ADRCONV_PAGES]; /* physical page number (addr >> 24) */
  /* The settings as given, for the byte-exact range checks of START and
   * PREPOST_INADDR (pages alone would accept addresses past a setting's end). */
  uint32_t range_count;
  drpai_adrconv_range_t ranges[DRPAI_ADRCONV_PAGES];
} drpai_adrconv_table_t;

/* Off, empty: the state after open(). */
void drpai_adrconv_init(drpai_adrconv_table_t* t);
/* Applies one SET_ADRCONV request. Returns 0, -EINVAL (bad argument: size 0,
 * conv_address >= 2^40, lower 24 bits differ, unknown mode, range past 4 GiB
 * or into the driver's reserved 0xFC000000-0xFFFFFFFF) or -ENOMEM (a page
 * already converted, or a physical page already a destination). A failed
 * request leaves the table unchanged. */
int drpai_adrconv_apply(drpai_adrconv_table_t* t, const drpai_adrconv_t* req);
/* DRP-AI address -> physical. Disabled tables pass addresses through.
 * Returns 0 or -1 for an address no enabled entry converts. */
int drpai_adrconv_translate(const drpai_adrconv_table_t* t, uint32_t org, uint64_t* phys);
/* Whether [phys, phys + size) lies inside one setting's destination range;
 * if so and org is not NULL, the DRP-AI address that reaches phys. */
int drpai_adrconv_covers(const drpai_adrconv_table_t* t, uint64_t phys, uint64_t size,
                         uint32_t* org);

#endif /* AXLE_DRPAI_ADRCONV_H_ */
