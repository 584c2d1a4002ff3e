/* SET_ADRCONV semantics (driver manual 4.2.5 and 4.3.2). */
#include "drpai_adrconv.h"

#include <errno.h>
#include <string.h>

#include "drpai_format.h"

void drpai_adrconv_init(drpai_adrconv_table_t* t) { memset(t, 0, sizeof(*t)); }

int drpai_adrconv_apply(drpai_adrconv_table_t* t, const drpai_adrconv_t* req) {
  if (req->mode == DRPAI_ADRCONV_MODE_DISABLE) {
    drpai_adrconv_init(t);
    return 0;
  }
  if (req->mode != DRPAI_ADRCONV_MODE_REPLACE && req->mode != DRPAI_ADRCONV_MODE_ADD)
    return -EINVAL;
  uint64_t org = req->org_address, size = req->size, conv = req->conv_address;
  if (size == 0 || conv >= DRPAI_PHYS_LIMIT) return -EINVAL;
  if ((org & DRPAI_PAGE_MASK) != (conv & DRPAI_PAGE_MASK)) return -EINVAL;
  if (org + size > DRPAI_RESERVED_ORG || conv + size > DRPAI_PHYS_LIMIT) return -EINVAL;

  /* Work on a copy so that a refused request leaves the old table intact. */
  drpai_adrconv_table_t next = *t;
  if (req->mode == DRPAI_ADRCONV_MODE_REPLACE) drpai_adrconv_init(&next);
  uint32_t first = (uint32_t)(org >> DRPAI_PAGE_SHIFT);
  uint32_t last = (uint32_t)((org + size - 1) >> DRPAI_PAGE_SHIFT);
  uint64_t conv_first = conv >> DRPAI_PAGE_SHIFT;
  for (uint32_t p = first; p <= last; ++p) {
    uint32_t dst = (uint32_t)(conv_first + (p - first));
    if (next.valid[p]) return -ENOMEM;
    for (uint32_t q = 0; q < DRPAI_ADRCONV_PAGES; ++q)
      if (next.valid[q] && next.conv_page[q] == dst) return -ENOMEM;
    next.valid[p] = 1;
    next.conv_page[p] = dst;
  }
  next.ranges[next.range_count].org = (uint32_t)org;
  next.ranges[next.range_count].size = (uint32_t)size;
  next.ranges[next.range_count].conv = conv;
  ++next.range_count;
  next.enabled = 1;
  *t = next;
  return 0;
}

int drpai_adrconv_translate(const drpai_adrconv_table_t* t, uint32_t org, uint64_t* phys) {
  if (!t->enabled) {
    *phys = org;
    return 0;
  }
  uint32_t page = org >> DRPAI_PAGE_SHIFT;
  if (!t->valid[page]) return -1;
  *phys = ((uint64_t)t->conv_page[page] << DRPAI_PAGE_SHIFT) | (org & DRPAI_PAGE_MASK);
  return 0;
}

int drpai_adrconv_covers(const drpai_adrconv_table_t* t, uint64_t phys, uint64_t size,
                         uint32_t* org) {
  for (uint32_t i = 0; i < t->range_count; ++i) {
    const drpai_adrconv_range_t* r = &t->ranges[i];
    if (phys >= r->conv && phys - r->conv <= r->size && size <= r->size - (phys - r->conv)) {
      if (org) *org = r->org + (uint32_t)(phys - r->conv);
      return 1;
    }
  }
  return 0;
}
