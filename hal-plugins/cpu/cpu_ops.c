/* Op lookup across the per-family tables. Called only at capability-query and
 * compile time, so a sorted index built once (binary search) is plenty; the
 * tables themselves stay plain arrays each family owns. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_op.h"

/* Comfortably above the ONNX default-domain operator count (~200). If the
 * tables ever outgrow it, lookup degrades to a linear scan, not an error. */
#define CPU_OP_INDEX_CAP 512

typedef struct {
  const cpu_op_t* op;
  uint32_t order; /* table precedence: first definition wins on duplicates */
} cpu_op_entry_t;

static cpu_op_entry_t g_index[CPU_OP_INDEX_CAP];
static size_t g_index_count;
static int g_index_overflow;
static pthread_once_t g_index_once = PTHREAD_ONCE_INIT;

static const cpu_op_t* const* families(size_t* count) {
  static const cpu_op_t* const tables[] = {cpu_ops_nn, cpu_ops_elementwise, cpu_ops_layout};
  *count = sizeof tables / sizeof tables[0];
  return tables;
}

static int entry_cmp(const void* a, const void* b) {
  const cpu_op_entry_t* x = a;
  const cpu_op_entry_t* y = b;
  const int c = strcmp(x->op->op_type, y->op->op_type);
  if (c) return c;
  return x->order < y->order ? -1 : x->order > y->order;
}

static void index_build(void) {
  size_t nfam;
  const cpu_op_t* const* tables = families(&nfam);
  uint32_t order = 0;
  for (size_t f = 0; f < nfam; ++f) {
    for (const cpu_op_t* op = tables[f]; op->op_type; ++op, ++order) {
      if (g_index_count == CPU_OP_INDEX_CAP) {
        g_index_overflow = 1;
        return;
      }
      g_index[g_index_count].op = op;
      g_index[g_index_count].order = order;
      ++g_index_count;
    }
  }
  qsort(g_index, g_index_count, sizeof g_index[0], entry_cmp);
}

static const cpu_op_t* find_linear(const char* op_type) {
  size_t nfam;
  const cpu_op_t* const* tables = families(&nfam);
  for (size_t f = 0; f < nfam; ++f)
    for (const cpu_op_t* op = tables[f]; op->op_type; ++op)
      if (strcmp(op->op_type, op_type) == 0) return op;
  return NULL;
}

const cpu_op_t* cpu_op_find(const char* op_type) {
  if (!op_type) return NULL;
  pthread_once(&g_index_once, index_build);
  if (g_index_overflow) return find_linear(op_type);
  /* Lower bound: the first (highest-precedence) entry with this name. */
  size_t lo = 0, hi = g_index_count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (strcmp(g_index[mid].op->op_type, op_type) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < g_index_count && strcmp(g_index[lo].op->op_type, op_type) == 0)
    return g_index[lo].op;
  return NULL;
}
