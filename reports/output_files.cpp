// Output safety (reports/output_files.hpp).
#include "reports/output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "ops/error.hpp"

namespace roofline {

namespace fs = std::filesystem;

namespace {

// The file a path names: links resolved (through every existing component), made absolute.
fs::path resolved(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? fs::absolute(path) : p;
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    return resolved(a) == resolved(b);
}

// Writes all of text to fd; false on any short or failed write.
bool write_all(int fd, const std::string& text) {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

struct Staged {
    fs::path target;
    std::string temporary;  // empty: written in place (a special file)
    const std::string* content = nullptr;
    std::string path;  // as the user gave it
};

}  // namespace

void check_output_targets(const std::vector<std::pair<std::string, std::string>>& outputs, const std::vector<std::string>& inputs) {
    bool stdout_taken = false;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& [flag, path] = outputs[i];
        if (path.empty()) continue;
        if (path == "-") {
            if (stdout_taken) throw InputError(flag + " -: standard output is already another output's");
            stdout_taken = true;
            continue;
        }
        std::error_code ec;
        if (fs::is_directory(path, ec)) throw InputError(flag + " " + path + ": is a directory, expected a file to write");
        for (const std::string& in : inputs) {
            if (!in.empty() && fs::exists(in, ec) && same_file(path, in))
                throw InputError(flag + " " + path + ": is an input of this command (" + in + "); refusing to overwrite it");
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (!outputs[j].second.empty() && outputs[j].second != "-" && same_file(path, outputs[j].second))
                throw InputError(flag + " " + path + " and " + outputs[j].first + " " + outputs[j].second + " are the same file");
        }
    }
}

void write_stdout(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
        throw InputError(std::string("-: write to standard output failed: ") + std::strerror(errno));
}

void commit_files(const std::vector<PendingFile>& files) {
    std::vector<Staged> staged;
    auto discard = [&] {
        for (const Staged& s : staged)
            if (!s.temporary.empty()) ::unlink(s.temporary.c_str());
    };
    // 1. Every regular file into a temporary beside its target; nothing is replaced yet.
    for (const PendingFile& f : files) {
        if (f.path == "-") {
            staged.push_back({{}, {}, &f.content, f.path});
            continue;
        }
        Staged s{resolved(f.path), {}, &f.content, f.path};
        struct stat st {};
        const bool exists = ::stat(s.target.c_str(), &st) == 0;
        if (exists && S_ISDIR(st.st_mode)) {
            discard();
            throw InputError(f.path + ": is a directory, expected a file to write");
        }
        if (exists && !S_ISREG(st.st_mode)) {  // a device or FIFO: written in place, in step 3
            staged.push_back(s);
            continue;
        }
        std::string tmpl = (s.target.parent_path() / ("." + s.target.filename().string() + ".XXXXXX")).string();
        const int fd = ::mkstemp(tmpl.data());
        if (fd < 0) {
            const std::string why = std::strerror(errno);
            discard();
            throw InputError(f.path + ": cannot create a file in " + s.target.parent_path().string() + ": " + why);
        }
        s.temporary = tmpl;
        staged.push_back(s);
        mode_t mode = 0;
        if (exists) {
            mode = st.st_mode & 07777;
        } else {
            const mode_t mask = ::umask(0);
            ::umask(mask);
            mode = 0666 & ~mask;
        }
        const bool ok = ::fchmod(fd, mode) == 0 && write_all(fd, f.content);
        const int closed = ::close(fd);
        if (!ok || closed != 0) {
            const std::string why = std::strerror(errno);
            discard();
            throw InputError(f.path + ": write failed: " + why);
        }
    }
    // 2. All complete: rename each over its target.
    for (const Staged& s : staged) {
        if (s.temporary.empty()) continue;
        std::error_code ec;
        fs::rename(s.temporary, s.target, ec);
        if (ec) {
            discard();
            throw InputError(s.path + ": cannot replace the file: " + ec.message());
        }
    }
    // 3. Special files and standard output, in place.
    for (const Staged& s : staged) {
        if (!s.temporary.empty()) continue;
        if (s.path == "-") {
            write_stdout(*s.content);
            continue;
        }
        const int fd = ::open(s.target.c_str(), O_WRONLY);
        if (fd < 0) throw InputError(s.path + ": cannot open for writing: " + std::strerror(errno));
        const bool ok = write_all(fd, *s.content);
        const int err = errno;
        if (::close(fd) != 0 || !ok) throw InputError(s.path + ": write failed: " + std::strerror(ok ? errno : err));
    }
}

}  // namespace roofline
