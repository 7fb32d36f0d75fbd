// Output safety (reports/output_files.hpp, issue #18): a command never loses a user's file.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

using test::slurp;

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string fresh_dir(const std::string& name) {
    const std::string d = test::tmp_path(name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

TEST_CASE("outputs: an output that is an input, or two outputs that are one file, are refused before any work", "[output]") {
    const std::string d = fresh_dir("out-same");
    spit(d + "/model.json", slurp(test::source_path("examples/two-layer-mlp.json")));
    const std::string before = slurp(d + "/model.json");
    const auto self = test::run_cli("analyze '" + d + "/model.json' -q -o '" + d + "/model.json'");
    CHECK(self.code == 2);
    CHECK_THAT(self.out, Catch::Contains("is an input of this command"));
    CHECK(slurp(d + "/model.json") == before);
    // The same file under two names (a link) counts as one.
    fs::create_symlink(d + "/model.json", d + "/alias.json");
    const auto alias = test::run_cli("analyze '" + d + "/model.json' -q -o '" + d + "/alias.json'");
    CHECK(alias.code == 2);
    CHECK(slurp(d + "/model.json") == before);
    const auto twice = test::run_cli("analyze gpt2-small -q -o '" + d + "/r.json' --html '" + d + "/r.json'");
    CHECK(twice.code == 2);
    CHECK_THAT(twice.out, Catch::Contains("are the same file"));
    CHECK_FALSE(fs::exists(d + "/r.json"));
    const auto dir = test::run_cli("generate llama-2-7b --prompt 16 --output 2 -q -o '" + d + "'");
    CHECK(dir.code == 2);
    CHECK_THAT(dir.out, Catch::Contains("is a directory"));
}

TEST_CASE("outputs: links written through, special files in place, permissions kept, all or none", "[output]") {
    const std::string d = fresh_dir("out-kinds");
    // A symbolic link stays a link; its target gets the report.
    spit(d + "/target.json", "old");
    fs::create_symlink(d + "/target.json", d + "/link.json");
    CHECK(test::run_cli("analyze mlp -q -o '" + d + "/link.json'").code == 0);
    CHECK(fs::is_symlink(d + "/link.json"));
    CHECK(slurp(d + "/target.json").find("roofline-report/1") != std::string::npos);
    // A character device is written in place, never replaced by a regular file.
    CHECK(test::run_cli("analyze mlp -q -o /dev/null").code == 0);
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    // An existing file keeps its permissions.
    spit(d + "/private.json", "old");
    fs::permissions(d + "/private.json", fs::perms::owner_read | fs::perms::owner_write);
    CHECK(test::run_cli("analyze mlp -q -o '" + d + "/private.json'").code == 0);
    CHECK((fs::status(d + "/private.json").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
    // All or none: when one output cannot be written (its directory does not exist), the others
    // are left as they were.
    spit(d + "/keep.json", "keep");
    const auto half = test::run_cli("analyze mlp -q -o '" + d + "/keep.json' --html '" + d + "/missing/x.html'");
    CHECK(half.code == 2);
    CHECK(slurp(d + "/keep.json") == "keep");
    for (const auto& e : fs::directory_iterator(d)) CHECK(e.path().filename().string().rfind(".keep.json.", 0) != 0);  // no temporary left
}

TEST_CASE("outputs: '-' is standard output, a failed write of standard output is an error", "[output]") {
    const auto out = test::run_cli("analyze mlp -q -o -");
    CHECK(out.code == 0);
    CHECK(out.out.find("\"schema\": \"roofline-report/1\"") != std::string::npos);
    // Standard output closed: the text cannot be written, and the exit code says so.
    const std::string err = test::tmp_path("closed-stdout.err");
    const int status = std::system(("'" + std::string(ROOFLINE_EXE) + "' hw list >&- 2>'" + err + "'").c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_THAT(slurp(err), Catch::Contains("writing standard output failed"));
}

TEST_CASE("inputs: devices, directories, duplicate keys and numbers beyond double are named, exit 2", "[input]") {
    const std::string d = fresh_dir("in-bad");
    const auto run = [](const std::string& args) { return test::run_cli(args); };
    // /dev/zero would be read forever; a directory is not a file.
    const auto zero = run("analyze /dev/zero -q");
    CHECK(zero.code == 2);
    CHECK_THAT(zero.out, Catch::Contains("/dev/zero: is not a regular file"));
    const auto spec = run("analyze mlp --hw /dev/zero -q");
    CHECK(spec.code == 2);
    CHECK_THAT(spec.out, Catch::Contains("is not a regular file"));
    const auto dir = run("analyze '" + d + "' -q");
    CHECK(dir.code == 2);
    CHECK_THAT(dir.out, Catch::Contains("is a directory"));
    // A key given twice: JSON parsers differ on which wins, so neither does.
    spit(d + "/dup.json", R"({"format": "roofline-model/1", "template": "mlp", "template": "gpt2-small"})");
    const auto dup = run("analyze '" + d + "/dup.json' -q");
    CHECK(dup.code == 2);
    CHECK_THAT(dup.out, Catch::Contains("duplicate key \"template\""));
    // A number beyond double's range is bad input, not an internal error.
    spit(d + "/huge.json", R"({"format": "roofline-model/1", "template": "mlp", "config": {"batch": 1e999}})");
    const auto huge = run("analyze '" + d + "/huge.json' -q");
    CHECK(huge.code == 2);
    CHECK_THAT(huge.out, Catch::Contains("beyond the range of a double"));
}

TEST_CASE("inputs: limits checked before building, control characters escaped on the terminal", "[input]") {
    const std::string d = fresh_dir("in-limits");
    // 100,000 layers ran a minute and gigabytes before failing; the bound (4,096) is checked first.
    spit(d + "/deep.json", R"({"format": "roofline-model/1", "template": "gpt", "config": {"n_layer": 100000}})");
    const auto deep = test::run_cli("analyze '" + d + "/deep.json' -q");
    CHECK(deep.code == 2);
    CHECK_THAT(deep.out, Catch::Contains("/config/n_layer: at most 4096 layers"));
    spit(d + "/deep-hf.json", R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 99999, "num_attention_heads": 4, "max_position_embeddings": 128})");
    const auto hf = test::run_cli("analyze '" + d + "/deep-hf.json' -q");
    CHECK(hf.code == 2);
    CHECK_THAT(hf.out, Catch::Contains("/num_hidden_layers: at most 4096 layers"));
    // A node name with an escape sequence (ESC [2J clears the screen) is printed escaped, in the
    // table and in an error message.
    spit(d + "/ctl.json",
         "{\"format\": \"roofline-model/1\", \"inputs\": [{\"name\": \"x\", \"shape\": [4]}], "
         "\"nodes\": [{\"name\": \"n\\u001b[2J\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}");
    const auto table = test::run_cli("analyze '" + d + "/ctl.json'");
    CHECK(table.code == 0);
    CHECK(table.out.find('\x1b') == std::string::npos);
    CHECK_THAT(table.out, Catch::Contains("n\\x1b[2J"));
    spit(d + "/ctl-bad.json",
         "{\"format\": \"roofline-model/1\", \"nodes\": [{\"name\": \"n\\u001b[2J\", \"op\": \"relu\", \"inputs\": [\"nope\"]}]}");
    const auto err = test::run_cli("analyze '" + d + "/ctl-bad.json'");
    CHECK(err.code == 2);
    CHECK(err.out.find('\x1b') == std::string::npos);
}
