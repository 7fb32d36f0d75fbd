#pragma once
// Errors the library reports. Bad input is normal input: every problem with a model, a hardware
// file or a command-line value becomes an InputError whose message names the file, JSON path or
// node and says what was expected. Only cli/ turns errors into exit codes.
#include <stdexcept>
#include <string>

namespace roofline {

class InputError : public std::runtime_error {
public:
    explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// No GPU to run on: no CUDA in this build, no driver, no device, or no permission to read
// counters where they were required. cli/ exits 3 with the message.
class DeviceUnavailable : public std::runtime_error {
public:
    explicit DeviceUnavailable(const std::string& what) : std::runtime_error(what) {}
};

// Prefixes an error with where it happened ("model.json: /nodes/3 (node 'fc1')").
[[noreturn]] inline void rethrow_with_context(const InputError& e, const std::string& where) { throw InputError(where + ": " + e.what()); }

}  // namespace roofline
