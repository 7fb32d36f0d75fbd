#pragma once
// Where a command's outputs go (issue #18): never lose a user's file.
//   - Every output is rendered first; then all are written or none is: each regular file goes to a
//     temporary file in its own directory, and only when every temporary is complete are they
//     renamed over their targets (keeping an existing target's permissions).
//   - A symbolic link is written through to its target; a special file (a character device such
//     as /dev/null, a FIFO) is written in place, never replaced; "-" is standard output.
//   - An output that names an input of the command, or two outputs that name one file (after
//     resolving links), is refused before any work, naming both flags.
//   - Every write and close is checked; a failed write of standard output is an error.
#include <string>
#include <utility>
#include <vector>

namespace roofline {

struct PendingFile {
    std::string path, content;
};

// (flag, path) of each output; empty paths are skipped. InputError naming the flags when an output
// is one of `inputs` or two outputs are the same file, or when a target is a directory.
void check_output_targets(const std::vector<std::pair<std::string, std::string>>& outputs, const std::vector<std::string>& inputs);

// Writes every file or, when any cannot be written, none (InputError naming the path).
void commit_files(const std::vector<PendingFile>& files);

// Writes text to standard output and checks it (InputError when the write fails).
void write_stdout(const std::string& text);

}  // namespace roofline
