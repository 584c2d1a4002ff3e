/*
 * A board-style DRP-AI application: it knows nothing of Axle, carries its
 * own copy of the driver's UAPI definitions (as an application built against
 * linux/drpai.h would), and runs an object-file directory with the sequence
 * of the driver manual (4.5.1):
 *
 *   open, GET_DRPAI_AREA, SET_ADRCONV, ASSIGN + write per object file,
 *   ASSIGN_PARAM + write of drp_param_info.txt, [PREPOST_CROP],
 *   ASSIGN + write of the input, START, pselect, GET_STATUS, ASSIGN + read.
 *
 * On a workstation it runs under LD_PRELOAD=libaxle_drpai_shim.so.
 *
 *   drpai_uapi_app [--dup-fork] DIR INPUT.bin OUTPUT.bin [CROP_W CROP_H CROP_X CROP_Y]
 *
 * --dup-fork runs the same sequence the way a program that hands its device
 * to a worker process does: the descriptor it uses is a dup (fcntl
 * F_DUPFD_CLOEXEC) of the opened one, which is closed at once; the object
 * files go through a dup3 of a dup of it, which a dup2 of the first then
 * replaces; and a forked child, on the inherited
 * descriptor, writes the input, starts, waits, and reads the output, while
 * the parent waits for it and then asks the device's status. Every step
 * relies on the descriptors being one open file (the address conversion set
 * through the first one is the one START checks).
 */
#define _GNU_SOURCE /* dup3 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- this application's copy of the UAPI (RZ/V2H linux/drpai.h) ---- */
#define DRPAI_IO_TYPE (46)
typedef struct { uint64_t address, size; } drpai_data_t;
typedef struct { uint32_t status; int32_t err; uint32_t reserved[32]; } drpai_status_t;
typedef struct { uint32_t info_size; drpai_data_t obj; } drpai_assign_param_t;
typedef struct { uint16_t img_owidth, img_oheight, pos_x, pos_y; drpai_data_t obj; } drpai_crop_t;
typedef struct { uint32_t org_address; uint32_t size; uint64_t conv_address; uint8_t mode; } drpai_adrconv_t;
#define DRPAI_ASSIGN _IOW(DRPAI_IO_TYPE, 0, drpai_data_t)
#define DRPAI_START _IOW(DRPAI_IO_TYPE, 1, drpai_data_t)
#define DRPAI_GET_STATUS _IOR(DRPAI_IO_TYPE, 3, drpai_status_t)
#define DRPAI_ASSIGN_PARAM _IOW(DRPAI_IO_TYPE, 6, drpai_assign_param_t)
#define DRPAI_PREPOST_CROP _IOW(DRPAI_IO_TYPE, 7, drpai_crop_t)
#define DRPAI_GET_DRPAI_AREA _IOR(DRPAI_IO_TYPE, 11, drpai_data_t)
#define DRPAI_SET_ADRCONV _IOW(DRPAI_IO_TYPE, 14, drpai_adrconv_t)
#define DRPAI_INDEX_NUM 10
#define DRPAI_ADRCONV_MODE_REPLACE 0
#ifndef ERESTART
#define ERESTART 85
#endif

#define BUF_SIZE 4096
#define LOAD_FD 21 /* --dup-fork: the descriptor number the object files go through */

enum { IN, OUT, CFG, DESC, PARAM, ADESC, ACMD, PDESC, PCMD, WEIGHT, NREG };
static const char* kRegion[NREG] = {"data_in", "data_out", "drp_config", "drp_desc", "drp_param",
                                    "aimac_desc", "aimac_cmd", "aimac_param_desc", "aimac_param_cmd", "weight"};
static const char* kFile[NREG] = {NULL, NULL, "drpcfg.mem", "drp_desc.bin", "drp_param.bin", "aimac_desc.bin",
                                  "aimac_cmd.bin", "aimac_param_desc.bin", "aimac_param_cmd.bin", "weight.dat"};
static uint64_t g_addr[NREG], g_size[NREG];
static uint64_t g_org, g_end, g_start; /* DRP-AI range of the program, and where it goes */

static int fail(const char* what) {
  fprintf(stderr, "drpai_uapi_app: %s: errno=%d (%s)\n", what, errno, strerror(errno));
  return 1;
}

/* The manual's 4.5.2 retry loop. */
static int retry_ioctl(int fd, unsigned long req, void* arg) {
  int ret;
  errno = 0;
  ret = ioctl(fd, req, arg);
  if (ret == -1 && errno == ERESTART) {
    do {
      errno = 0;
      ret = ioctl(fd, req, arg);
    } while (ret == -1 && errno == ERESTART);
  }
  return ret;
}

static uint64_t phys(uint64_t drpai_address) { return drpai_address - g_org + g_start; }

static int read_addr_map(const char* dir) {
  char path[1024], name[64];
  unsigned long long a, s;
  snprintf(path, sizeof(path), "%s/addr_map.txt", dir);
  FILE* f = fopen(path, "r");
  if (!f) return fail(path);
  g_org = UINT64_MAX;
  while (fscanf(f, "%63s %llx %llx", name, &a, &s) == 3) {
    for (int r = 0; r < NREG; ++r)
      if (strcmp(name, kRegion[r]) == 0) {
        g_addr[r] = a;
        g_size[r] = s;
      }
    if (a < g_org) g_org = a;
    if (a + s > g_end) g_end = a + s;
  }
  fclose(f);
  return 0;
}

/* ASSIGN, then write in BUF_SIZE pieces (Figure 4-2). */
static int load(int fd, uint64_t address, const void* data, size_t size) {
  drpai_data_t d = {address, size};
  if (retry_ioctl(fd, DRPAI_ASSIGN, &d) != 0) return fail("DRPAI_ASSIGN");
  const uint8_t* p = (const uint8_t*)data;
  while (size) {
    size_t n = size < BUF_SIZE ? size : BUF_SIZE;
    ssize_t w;
    do {
      errno = 0;
      w = write(fd, p, n);
    } while (w == -1 && errno == ERESTART);
    if (w <= 0) return fail("write");
    p += w;
    size -= (size_t)w;
  }
  return 0;
}

static void* slurp(const char* dir, const char* name, size_t* size) {
  char path[1024];
  if (dir)
    snprintf(path, sizeof(path), "%s/%s", dir, name);
  else
    snprintf(path, sizeof(path), "%s", name);
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* Input, START, pselect, GET_STATUS, ASSIGN + read of the output into
 * out_path, close: the inference half of the sequence. */
static int infer(int fd, const char* in_path, const char* out_path) {
  size_t in_size;
  void* input = slurp(NULL, in_path, &in_size);
  if (!input || in_size > g_size[IN]) return fail("input file");
  if (load(fd, phys(g_addr[IN]), input, in_size)) return 1;
  free(input);

  drpai_data_t proc[DRPAI_INDEX_NUM];
  static const int order[DRPAI_INDEX_NUM] = {IN, DESC, CFG, PARAM, ADESC, WEIGHT, OUT, ACMD, PDESC, PCMD};
  for (int i = 0; i < DRPAI_INDEX_NUM; ++i) {
    proc[i].address = phys(g_addr[order[i]]);
    proc[i].size = g_size[order[i]];
  }
  errno = 0;
  if (ioctl(fd, DRPAI_START, &proc[0]) != 0) return fail("DRPAI_START");

  fd_set rfds;
  FD_ZERO(&rfds);
  FD_SET(fd, &rfds);
  struct timespec tv = {5, 0};
  sigset_t mask;
  sigemptyset(&mask);
  int ready = pselect(fd + 1, &rfds, NULL, NULL, &tv, &mask);
  if (ready == 0) {
    fprintf(stderr, "drpai_uapi_app: inference timed out\n");
    return 1;
  }
  if (ready < 0) return fail("pselect");
  drpai_status_t st;
  if (ioctl(fd, DRPAI_GET_STATUS, &st) != 0) {
    fprintf(stderr, "drpai_uapi_app: GET_STATUS: errno=%d err=%d\n", errno, (int)st.err);
    return 1;
  }

  void* out = malloc(g_size[OUT]);
  drpai_data_t d = {phys(g_addr[OUT]), g_size[OUT]};
  if (!out || retry_ioctl(fd, DRPAI_ASSIGN, &d) != 0) return fail("DRPAI_ASSIGN output");
  ssize_t r;
  do {
    errno = 0;
    r = read(fd, out, g_size[OUT]);
  } while (r == -1 && errno == ERESTART);
  if (r != (ssize_t)g_size[OUT]) return fail("read");
  FILE* f = fopen(out_path, "wb");
  if (!f || fwrite(out, 1, g_size[OUT], f) != g_size[OUT] || fclose(f) != 0) return fail(out_path);
  free(out);
  if (close(fd) != 0) return fail("close");
  return 0;
}

int main(int argc, char** argv) {
  int dup_fork = argc > 1 && strcmp(argv[1], "--dup-fork") == 0;
  argc -= dup_fork;
  argv += dup_fork;
  if (argc != 4 && argc != 8) {
    fprintf(stderr, "usage: drpai_uapi_app [--dup-fork] DIR INPUT.bin OUTPUT.bin [CROP_W CROP_H CROP_X CROP_Y]\n");
    return 2;
  }
  const char* dir = argv[1];
  if (read_addr_map(dir)) return 1;
  int fd = open("/dev/drpai0", O_RDWR);
  if (fd < 0) return fail("open /dev/drpai0");
  int load_fd = fd;
  if (dup_fork) {
    int opened = fd;
    fd = fcntl(opened, F_DUPFD_CLOEXEC, 10);
    if (fd < 0) return fail("F_DUPFD_CLOEXEC");
    if (close(opened) != 0) return fail("close of the opened descriptor");
    /* dup, then dup3 onto a chosen number: the copy of the copy loads. */
    int copy = dup(fd);
    if (copy < 0) return fail("dup");
    load_fd = dup3(copy, LOAD_FD, O_CLOEXEC);
    if (load_fd != LOAD_FD) return fail("dup3");
    if (close(copy) != 0) return fail("close of the dup");
  }

  drpai_data_t area;
  if (retry_ioctl(fd, DRPAI_GET_DRPAI_AREA, &area) != 0) return fail("DRPAI_GET_DRPAI_AREA");
  /* Place the program at the start of the area, shifted so that the lower
   * 24 bits agree with its DRP-AI addresses (the SET_ADRCONV rule). */
  g_start = area.address + ((g_org - area.address) & 0xFFFFFF);
  drpai_adrconv_t conv = {(uint32_t)g_org, (uint32_t)(g_end - g_org), g_start, DRPAI_ADRCONV_MODE_REPLACE};
  if (retry_ioctl(fd, DRPAI_SET_ADRCONV, &conv) != 0) return fail("DRPAI_SET_ADRCONV");

  for (int r = CFG; r < NREG; ++r) {
    size_t n;
    void* data = slurp(dir, kFile[r], &n);
    if (!data) return fail(kFile[r]);
    if (n && load(load_fd, phys(g_addr[r]), data, n)) return 1;
    free(data);
  }
  /* dup2 onto the loading descriptor replaces it, as a close would; the
   * file stays open through fd. */
  if (load_fd != fd && (dup2(fd, load_fd) != load_fd || close(load_fd) != 0)) return fail("dup2 / close");

  size_t info_size;
  char* info = (char*)slurp(dir, "drp_param_info.txt", &info_size);
  if (!info) return fail("drp_param_info.txt");
  drpai_assign_param_t ap = {(uint32_t)info_size, {phys(g_addr[PARAM]), g_size[PARAM]}};
  if (retry_ioctl(fd, DRPAI_ASSIGN_PARAM, &ap) != 0) return fail("DRPAI_ASSIGN_PARAM");
  for (size_t at = 0; at < info_size;) {
    size_t n = info_size - at < BUF_SIZE ? info_size - at : BUF_SIZE;
    ssize_t w;
    do {
      errno = 0;
      w = write(fd, info + at, n);
    } while (w == -1 && errno == ERESTART);
    if (w <= 0) return fail("write drp_param_info.txt");
    at += (size_t)w;
  }
  free(info);

  if (argc == 8) {
    drpai_crop_t crop = {(uint16_t)atoi(argv[4]), (uint16_t)atoi(argv[5]), (uint16_t)atoi(argv[6]),
                         (uint16_t)atoi(argv[7]), {phys(g_addr[PARAM]), g_size[PARAM]}};
    if (retry_ioctl(fd, DRPAI_PREPOST_CROP, &crop) != 0) return fail("DRPAI_PREPOST_CROP");
  }

  pid_t child = dup_fork ? fork() : 0;
  if (child < 0) return fail("fork");
  if (child > 0) {
    int status;
    if (waitpid(child, &status, 0) != child) return fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    /* The child's inference is the device's last one. */
    drpai_status_t st;
    if (ioctl(fd, DRPAI_GET_STATUS, &st) != 0 || st.err != 0) return fail("DRPAI_GET_STATUS after the child");
    if (close(fd) != 0) return fail("close");
    return 0;
  }

  if (dup_fork) {
    /* A child forked from a threaded process leaves with _exit: exit
     * handlers (the sanitizers' leak check among them) are the parent's. */
    _exit(infer(fd, argv[2], argv[3]));
  }
  return infer(fd, argv[2], argv[3]);
}
