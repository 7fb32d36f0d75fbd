#pragma once
// The whole command line: parses argv, runs the subcommand, and returns the exit code (README,
// "Exit codes"). main.cpp is only a call to it.
#include <string>

namespace roofline::cli {

// process_exits: the caller exits when it returns (main.cpp), so a command's large results are kept
// rather than freed (keep_until_exit, cli/commands.hpp); callers that run commands in a loop leave it false.
int run(int argc, char** argv, bool process_exits = false);

// The same command line for a caller that handles errors itself (the Python module, python/):
// the library's errors propagate as they were thrown (InputError, DeviceUnavailable, ...), a usage
// error or an unknown command becomes an InputError with the message run() prints, and what the
// command prints to standard output is appended to *captured when it is given (files it writes,
// "-" included, are written as usual). Returns the exit code of a command that ran (0, or 1 when
// measure's kernels disagree with the CPU reference) or of --help / --version. Not reentrant: one
// call at a time per process.
int run_unchecked(int argc, char** argv, std::string* captured);

}  // namespace roofline::cli
