/*
 * A DRP-AI program in host memory: the object-file set, its address map and
 * the parsed drp_param_info.txt. Produced by the compiler, written to and
 * read from an object-file directory (what `axle drpai-translate` writes and
 * what a board application loads), and packed into one blob for
 * executable_serialize (the "AXDS" container of docs/drpai.md).
 */
#ifndef AXLE_DRPAI_PROGRAM_H_
#define AXLE_DRPAI_PROGRAM_H_

#include <stddef.h>
#include <stdint.h>

#include "drpai_format.h"
#include "drpai_paraminfo.h"

typedef struct drpai_blob_t {
  uint8_t* data;   /* malloc'ed */
  uint32_t size;
} drpai_blob_t;

typedef struct drpai_region_t {
  uint32_t addr;   /* DRP-AI address (addr_map.txt) */
  uint32_t size;
} drpai_region_t;

typedef struct drpai_program_t {
  drpai_blob_t file[DRPAI_FILE_COUNT];
  drpai_region_t region[DRPAI_REGION_COUNT];
  uint32_t org_base;   /* lowest region address */
  uint32_t total;      /* bytes from org_base to the end of the last region */
  drpai_info_t info;   /* drp_param_info.txt, parsed */
} drpai_program_t;

extern const char* const drpai_file_names[DRPAI_FILE_COUNT];
extern const char* const drpai_region_names[DRPAI_REGION_COUNT];
#define DRPAI_ADDR_MAP_NAME "addr_map.txt"

/* The region a file is placed in, or -1 (drp_param_info.txt is not). */
int drpai_file_region(int file);

void drpai_program_free(drpai_program_t* p);
/* Packs the regions from org_base in region order, 64-byte aligned, given
 * each region's size (file regions: the file size). */
void drpai_program_layout(drpai_program_t* p, uint32_t org_base);

/* Object-file directory. write: 0 or -1 with err; read: 0, 1 when dir is
 * not a DRP-AI object-file directory (no addr_map.txt / drp_desc.bin), -1
 * when it is one but broken (err says why). */
int drpai_program_write_dir(const drpai_program_t* p, const char* dir, char* err, size_t err_size);
int drpai_program_read_dir(const char* dir, drpai_program_t* p, char* err, size_t err_size);

/* Container: malloc'ed blob. unpack: 0, 1 not a container, 2 newer
 * version, -1 damaged (err says why). */
int drpai_program_pack(const drpai_program_t* p, uint8_t** out, size_t* out_size);
int drpai_program_unpack(const uint8_t* data, size_t size, drpai_program_t* p, char* err,
                         size_t err_size);

/* Formats addr_map.txt ("name 0xADDR 0xSIZE" per line); malloc'ed. */
char* drpai_program_addr_map(const drpai_program_t* p);

/* What the program runs, one line per DRP stage and AI-MAC layer, into
 * text (at most size bytes, NUL-terminated). Reads the files defensively: a
 * loaded program's descriptors are only validated by the device. */
void drpai_program_report(const drpai_program_t* p, char* text, size_t size);

/* The io lines of a kind (0 inputs, 1 outputs), in index order. */
uint32_t drpai_program_io_count(const drpai_program_t* p, int output);
const drpai_info_io_t* drpai_program_io(const drpai_program_t* p, int output, uint32_t index);

#endif /* AXLE_DRPAI_PROGRAM_H_ */
