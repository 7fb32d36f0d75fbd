// roofline: where does the time go on this accelerator, and what would a change pay?
// Only cli/run.cpp decides exit codes (README, "Exit codes"): 0 success; 1 internal error, or
// `measure` found kernels that differ from the CPU reference; 2 bad input (a message names the
// file, JSON path or node) or an output that cannot be written; 3 no usable GPU (measure, calibrate).
#include "cli/run.hpp"

int main(int argc, char** argv) { return roofline::cli::run(argc, argv, true); }
