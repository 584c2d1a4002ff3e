#include "k210_ram.h"

#include <string.h>

k210_fmap_t k210_fmap_for_shape(uint32_t base_row, uint32_t width, uint32_t height,
                                uint32_t channels) {
  k210_fmap_t m = {base_row, 0, 1, 1, width, height, channels};
  if (width <= 16)
    m.groups = 4;
  else if (width <= 32)
    m.groups = 2;
  else
    m.row_switch = (width + 63) / 64;
  m.channel_switch = m.row_switch * height;
  return m;
}

size_t k210_fmap_line(const k210_fmap_t* m, uint32_t c, uint32_t y) {
  size_t row = (size_t)m->base_row + (size_t)(c / m->groups) * m->channel_switch +
               (size_t)y * m->row_switch;
  return row * K210_RAM_ROW_BYTES + (size_t)(c % m->groups) * (K210_RAM_ROW_BYTES / m->groups);
}

uint32_t k210_fmap_rows(const k210_fmap_t* m) {
  /* The last line of the last channel holds the highest byte. */
  size_t end = k210_fmap_line(m, m->channels - 1, m->height - 1) + m->width;
  size_t first = (size_t)m->base_row * K210_RAM_ROW_BYTES;
  return (uint32_t)((end - first + K210_RAM_ROW_BYTES - 1) / K210_RAM_ROW_BYTES);
}

const char* k210_fmap_check(const k210_fmap_t* m) {
  if (m->groups != 1 && m->groups != 2 && m->groups != 4)
    return "channels per row must be 1, 2 or 4";
  if (m->width == 0 || m->height == 0 || m->channels == 0) return "empty feature map";
  if (m->row_switch == 0) return "zero rows per line";
  if (m->groups > 1 ? m->width > K210_RAM_ROW_BYTES / m->groups
                    : m->width > (uint64_t)m->row_switch * K210_RAM_ROW_BYTES)
    return "lines are wider than the row space the layout gives them";
  if (m->channels > m->groups && (uint64_t)m->channel_switch < (uint64_t)m->row_switch * m->height)
    return "channel groups overlap (channel switch smaller than rows per line x height)";
  size_t end = k210_fmap_line(m, m->channels - 1, m->height - 1) + m->width;
  if (end > K210_RAM_BYTES) return "feature map extends past the end of KPU RAM (2 MiB)";
  return NULL;
}

void k210_fmap_load(const uint8_t* ram, const k210_fmap_t* m, uint8_t* nchw) {
  for (uint32_t c = 0; c < m->channels; ++c)
    for (uint32_t y = 0; y < m->height; ++y, nchw += m->width)
      memcpy(nchw, ram + k210_fmap_line(m, c, y), m->width);
}

void k210_fmap_store(uint8_t* ram, const k210_fmap_t* m, const uint8_t* nchw) {
  for (uint32_t c = 0; c < m->channels; ++c)
    for (uint32_t y = 0; y < m->height; ++y, nchw += m->width)
      memcpy(ram + k210_fmap_line(m, c, y), nchw, m->width);
}
