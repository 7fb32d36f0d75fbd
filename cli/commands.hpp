#pragma once
#include <memory>
#include <vector>
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
    bool process = false;  // run(..., true): the process exits when the command returns
};
Outcome& outcome();

// A command's large results (graphs, analyses) when the process is about to exit: kept, reachable,
// instead of freed one allocation at a time, which took an eighth of `analyze gpt3-175b --mode
// training` (issue #20; clang's -disable-free does the same). Under run_unchecked (tests, fuzzing)
// and run() without process_exits, the value is destroyed as usual.
template <class T>
void keep_until_exit(T&& value) {
    if (!outcome().process) return;
    static auto* kept = new std::vector<std::shared_ptr<void>>();
    kept->push_back(std::make_shared<std::decay_t<T>>(std::forward<T>(value)));
}

}  // namespace roofline::cli
