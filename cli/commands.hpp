#pragma once
// Subcommands of the roofline executable. Each returns the process exit code:
// 0 success, 2 bad input (message already printed), 3 no GPU / driver / permission (measure).
#include <CLI/CLI.hpp>
#include <string>

namespace roofline::cli {

void add_analyze(CLI::App& app);
void add_hw(CLI::App& app);
void add_model(CLI::App& app);
void add_measure(CLI::App& app);  // measure_commands.cpp: needs a GPU (exit 3 without one)
void add_compare(CLI::App& app);  // offline
void add_calibrate(CLI::App& app);
void add_plan(CLI::App& app);      // plan_command.cpp  // needs a GPU
void add_validate(CLI::App& app);  // validate_command.cpp: offline
void add_search(CLI::App& app);    // search_command.cpp: offline
void add_generate(CLI::App& app);  // generate_command.cpp: offline
void add_serve(CLI::App& app);     // serve_command.cpp: offline

// Writes text for the terminal to standard output, control characters other than newline and tab
// escaped (\x1b...): names from a model file cannot drive the terminal.
void print(const std::string& text);

// Exit code and message of the subcommand that ran (set by its callback), and the command line
// main() was given (measure and calibrate hand it to the GPU executable); print() appends to
// `captured` instead of writing standard output when it is set (run_unchecked).
struct Outcome {
    int code = 0;
    int argc = 0;
    char** argv = nullptr;
    std::string* captured = nullptr;
};
Outcome& outcome();

}  // namespace roofline::cli
