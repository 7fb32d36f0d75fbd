// roofline: where does the time go on this accelerator, and what would a change pay?
// Only cli/run.cpp decides exit codes (README, "Exit codes"): 0 success; 1 internal error, or
// `measure` found kernels that differ from the CPU reference; 2 bad input (a message names the
// file, JSON path or node) or an output that cannot be written; 3 no usable GPU (measure, calibrate).
#include "cli/run.hpp"

#ifdef ROOFLINE_WITH_MIMALLOC
#include <mimalloc.h>

namespace {

// A command touches its heap once, fresh (GPT-3's training step: 13 MiB, 3,300 page faults of 4
// KiB, a fifth of the command's 28 ms): mimalloc's large OS pages (madvise(MADV_HUGEPAGE) on its
// segments; the kernel's transparent huge pages, where it has them) fault it in 2 MiB at a time
// (issue #20). Set before anything allocates (.preinit_array runs ahead of every library's
// constructors), as a default: MIMALLOC_LARGE_OS_PAGES in the environment still decides.
void prefer_large_pages() { mi_option_set_default(mi_option_large_os_pages, 1); }
[[gnu::section(".preinit_array"), gnu::used]] void (*const preinit_large_pages)() = prefer_large_pages;

}  // namespace
#endif

int main(int argc, char** argv) { return roofline::cli::run(argc, argv, true); }
