/* Helpers of the DRP-AI emulator tests (see drpai_fixture.h). */
#include "drpai_fixture.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "drpai_format.h"

int fx_ioctl_retry(drpai_emu_file_t* f, unsigned long req, void* arg) {
  int rc;
  while ((rc = drpai_emu_ioctl(f, req, arg)) == -ERESTART) sched_yield();
  return rc;
}

int fx_put(drpai_emu_file_t* f, uint64_t addr, const void* data, size_t n) {
  drpai_data_t d = {addr, n};
  int rc = fx_ioctl_retry(f, DRPAI_ASSIGN, &d);
  const uint8_t* p = (const uint8_t*)data;
  while (rc == 0 && n) {
    ssize_t w = drpai_emu_write(f, p, n);
    if (w == -ERESTART) continue;
    if (w < 0) return (int)w;
    p += w;
    n -= (size_t)w;
  }
  return rc;
}

int fx_get(drpai_emu_file_t* f, uint64_t addr, void* data, size_t n) {
  drpai_data_t d = {addr, n};
  int rc = fx_ioctl_retry(f, DRPAI_ASSIGN, &d);
  while (rc == 0) {
    ssize_t r = drpai_emu_read(f, data, n);
    if (r == -ERESTART) continue;
    return r < 0 ? (int)r : 0;
  }
  return rc;
}

static void header(uint8_t* h, const char* magic, uint16_t entry, uint32_t count) {
  memset(h, 0, DRPAI_HEADER_BYTES);
  memcpy(h, magic, 4);
  drpai_put16(h + 4, DRPAI_FORMAT_VERSION);
  drpai_put16(h + 6, entry);
  drpai_put32(h + 8, count);
}

void fx_trivial(drpai_emu_file_t* f, uint64_t base, int broken, drpai_data_t proc[DRPAI_INDEX_NUM]) {
  uint8_t cfg[DRPAI_HEADER_BYTES], desc[DRPAI_HEADER_BYTES];
  header(cfg, DRPAI_MAGIC_DRPCFG, DRPAI_DRPCFG_ENTRY, 0);
  header(desc, broken ? "XXXX" : DRPAI_MAGIC_DRP_DESC, DRPAI_DRP_DESC_ENTRY, 0);
  fx_put(f, base, cfg, sizeof(cfg));
  fx_put(f, base + 0x40, desc, sizeof(desc));
  for (int i = 0; i < DRPAI_INDEX_NUM; ++i) {
    proc[i].address = base + 0x80;
    proc[i].size = 0;
  }
  proc[DRPAI_INDEX_DRP_CFG].address = base;
  proc[DRPAI_INDEX_DRP_CFG].size = sizeof(cfg);
  proc[DRPAI_INDEX_DRP_DESC].address = base + 0x40;
  proc[DRPAI_INDEX_DRP_DESC].size = sizeof(desc);
  proc[DRPAI_INDEX_INPUT].size = 64;
  proc[DRPAI_INDEX_OUTPUT].size = 64;
}

void fx_crop(drpai_emu_file_t* f, uint64_t base, uint32_t w, uint32_t h, drpai_data_t proc[DRPAI_INDEX_NUM],
             drpai_data_t* obj) {
  /* The default area lies above 4 GiB: the program's DRP-AI addresses start
   * at org, and SET_ADRCONV maps the rest of that 16 MiB page onto base. */
  uint32_t org = (uint32_t)(base & 0xFFFFFF);
  drpai_adrconv_t conv = {org, 0x1000000 - org, base, DRPAI_ADRCONV_MODE_REPLACE};
  fx_ioctl_retry(f, DRPAI_SET_ADRCONV, &conv);
  fx_crop_at(f, org, base, w, h, proc, obj);
}

void fx_crop_at(drpai_emu_file_t* f, uint32_t org, uint64_t base, uint32_t w, uint32_t h,
                drpai_data_t proc[DRPAI_INDEX_NUM], drpai_data_t* obj) {
  /* The image at +0x1000, the crop result and the RGB image after it. */
  uint32_t bytes = w * h * 2;
  uint32_t img = org + 0x1000;
  uint32_t mid = (img + bytes + 63) & ~63u, out = (mid + bytes + 63) & ~63u;
  uint8_t cfg[DRPAI_HEADER_BYTES + 8], desc[DRPAI_HEADER_BYTES + 2 * DRPAI_DRP_DESC_ENTRY];
  uint8_t param[2 * DRPAI_PARAM_BLOCK];
  header(cfg, DRPAI_MAGIC_DRPCFG, DRPAI_DRPCFG_ENTRY, 2);
  drpai_put32(cfg + 32, DRPAI_LIB_CROP);
  drpai_put32(cfg + 36, DRPAI_LIB_YUV2RGB);
  header(desc, DRPAI_MAGIC_DRP_DESC, DRPAI_DRP_DESC_ENTRY, 2);
  drpai_put32(desc + 12, img);
  drpai_put32(desc + 16, bytes);
  drpai_put32(desc + 20, out);
  drpai_put32(desc + 24, w * h * 3);
  for (uint32_t i = 0; i < 2; ++i) {
    uint8_t* e = desc + DRPAI_HEADER_BYTES + i * DRPAI_DRP_DESC_ENTRY;
    memset(e, 0, DRPAI_DRP_DESC_ENTRY);
    drpai_put32(e, DRPAI_STAGE_DRP);
    drpai_put32(e + 4, i ? DRPAI_LIB_YUV2RGB : DRPAI_LIB_CROP);
    drpai_put32(e + 8, i * DRPAI_PARAM_BLOCK);
  }
  memset(param, 0, sizeof(param));
  uint8_t* c = param;
  drpai_put32(c + DRPAI_P_LIB, DRPAI_LIB_CROP);
  drpai_put32(c + DRPAI_P_RADDR, img);
  drpai_put32(c + DRPAI_P_WADDR, mid);
  drpai_put16(c + DRPAI_P_IWIDTH, (uint16_t)w);
  drpai_put16(c + DRPAI_P_IHEIGHT, (uint16_t)h);
  drpai_put16(c + DRPAI_P_OWIDTH, (uint16_t)w);
  drpai_put16(c + DRPAI_P_OHEIGHT, (uint16_t)h);
  drpai_put16(c + DRPAI_P_ICH, 2);
  drpai_put16(c + DRPAI_P_FLAGS, DRPAI_PF_SRC_INPUT);
  drpai_put32(c + DRPAI_P_ICAP, bytes);
  drpai_put32(c + DRPAI_P_OCAP, bytes);
  drpai_put16(c + DRPAI_P_CROP_FMT, 1);
  drpai_put16(c + DRPAI_P_CROP_ELEM, 2);
  uint8_t* y = param + DRPAI_PARAM_BLOCK;
  drpai_put32(y + DRPAI_P_LIB, DRPAI_LIB_YUV2RGB);
  drpai_put32(y + DRPAI_P_RADDR, mid);
  drpai_put32(y + DRPAI_P_WADDR, out);
  drpai_put16(y + DRPAI_P_IWIDTH, (uint16_t)w);
  drpai_put16(y + DRPAI_P_IHEIGHT, (uint16_t)h);
  drpai_put16(y + DRPAI_P_OWIDTH, (uint16_t)w);
  drpai_put16(y + DRPAI_P_OHEIGHT, (uint16_t)h);
  drpai_put16(y + DRPAI_P_ICH, 2);
  drpai_put16(y + DRPAI_P_FLAGS, DRPAI_PF_SIZE_FOLLOWS | DRPAI_PF_DST_OUTPUT);
  drpai_put32(y + DRPAI_P_ICAP, bytes);
  drpai_put32(y + DRPAI_P_OCAP, w * h * 3);
  fx_put(f, base, cfg, sizeof(cfg));
  fx_put(f, base + 0x40, desc, sizeof(desc));
  fx_put(f, base + 0x100, param, sizeof(param));
  obj->address = base + 0x100;
  obj->size = sizeof(param);
  char info[512];
  int n = snprintf(info, sizeof(info),
                   "io:input,index:0,name:camera_data,dtype:uint8,shape:%ux%ux2,addr:0x%X,size:0x%X\n"
                   "io:output,index:0,name:rgb,dtype:uint8,shape:%ux%ux3,addr:0x%X,size:0x%X\n"
                   "op:0,lib:crop,offset:0x0,size:0x80,node:camera_data\n"
                   "op:1,lib:conv_yuv2rgb,offset:0x80,size:0x80\n",
                   h, w, img, bytes, h, w, out, w * h * 3);
  drpai_assign_param_t ap = {(uint32_t)n, *obj};
  fx_ioctl_retry(f, DRPAI_ASSIGN_PARAM, &ap);
  while (drpai_emu_write(f, info, (size_t)n) == -ERESTART) {
  }
  for (int i = 0; i < DRPAI_INDEX_NUM; ++i) {
    proc[i].address = base + 0x80;
    proc[i].size = 0;
  }
  proc[DRPAI_INDEX_DRP_CFG] = (drpai_data_t){base, sizeof(cfg)};
  proc[DRPAI_INDEX_DRP_DESC] = (drpai_data_t){base + 0x40, sizeof(desc)};
  proc[DRPAI_INDEX_DRP_PARAM] = *obj;
  proc[DRPAI_INDEX_INPUT] = (drpai_data_t){base + (img - org), bytes};
  proc[DRPAI_INDEX_OUTPUT] = (drpai_data_t){base + (out - org), w * h * 3};
}

int fx_readable(drpai_emu_file_t* f, int ms) {
  struct pollfd p = {drpai_emu_pollfd(f), POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}
