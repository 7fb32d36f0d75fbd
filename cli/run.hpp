#pragma once
// The whole command line: parses argv, runs the subcommand, and returns the exit code (README,
// "Exit codes"). main.cpp is only a call to it.

namespace roofline::cli {

int run(int argc, char** argv);

}  // namespace roofline::cli
