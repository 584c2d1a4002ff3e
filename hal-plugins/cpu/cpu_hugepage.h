/*
 * Transparent huge pages for the CPU plugin's large blocks: packed weights
 * and the per-run tensor arena and kernel scratch.
 *
 * A network streams its packed weights from memory on every run (ResNet-50:
 * about 100 MB) and its activations span several MB; on 4 KiB pages that is
 * far more pages than the second-level TLB maps, so the streams pay page
 * walks. A block of CPU_HUGE_BYTES or more is therefore placed on a 2 MiB
 * boundary and advised MADV_HUGEPAGE before anything touches it; a kernel
 * whose THP mode is "madvise" (Debian's default) or "always" backs its whole
 * 2 MiB ranges with huge pages, "never" ignores the advice. The tail past the
 * last whole 2 MiB stays on small pages, so no block grows in resident size
 * by more than what it touches.
 *
 * AXLE_CPU_HUGE_PAGES=0 in the environment turns the advice off (read on
 * every call; for comparing, and for systems where huge pages are scarce).
 * Thread safety: both functions may be called from any thread.
 */
#ifndef AXLE_CPU_HUGEPAGE_H_
#define AXLE_CPU_HUGEPAGE_H_

#include <stddef.h>

#define CPU_HUGE_BYTES ((size_t)2 << 20)

/* The alignment to request for a block of `size` bytes that needs `align`:
 * CPU_HUGE_BYTES for blocks that large (when enabled), `align` otherwise. */
size_t cpu_huge_align(size_t size, size_t align);

/* Advises huge pages for the whole 2 MiB ranges inside [p, p + size), a
 * block nothing has touched yet. Returns 1 if the kernel accepted advice for
 * at least one range, 0 otherwise (disabled, too small, unsupported). The
 * block stays the caller's; this changes how it is backed, never its
 * contents. */
int cpu_huge_advise(void* p, size_t size);

#endif /* AXLE_CPU_HUGEPAGE_H_ */
