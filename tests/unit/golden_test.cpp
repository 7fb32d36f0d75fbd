// Golden outputs (issue #20: speed work must not change a byte of what users get): every command in
// tests/data/golden/commands.txt runs the roofline executable from the source directory, and its
// output is compared byte for byte with the committed file. An intended change of the model or the
// reports regenerates them (tests/tools/update_golden.py) and shows in the diff.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct GoldenCase {
    std::string file, args;
};

std::vector<GoldenCase> golden_cases() {
    std::ifstream in(test::source_path("tests/data/golden/commands.txt"));
    std::vector<GoldenCase> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (trim(line).empty() || trim(line)[0] == '#') continue;
        const auto bar = line.find('|');
        if (bar == std::string::npos) continue;
        cases.push_back({trim(line.substr(0, bar)), trim(line.substr(bar + 1))});
    }
    return cases;
}

}  // namespace

TEST_CASE("every golden command prints or writes exactly its committed bytes", "[cli][report][golden]") {
    const std::vector<GoldenCase> cases = golden_cases();
    // The list itself: eight commands over the report, plan, table, eager, fused, MoE and TPU paths.
    REQUIRE(cases.size() == 8);
    for (const GoldenCase& c : cases) {
        INFO("golden " << c.file << ": roofline " << c.args);
        const std::string expected = test::slurp(test::source_path("tests/data/golden/" + c.file));
        REQUIRE_FALSE(expected.empty());
        std::string args = c.args;
        std::string out;
        if (const auto at = args.find(" OUT"); at != std::string::npos) {
            out = test::tmp_path("golden-" + c.file);
            fs::remove(out);
            args.replace(at, 4, " '" + out + "'");
        }
        // From the source directory, as tests/tools/update_golden.py runs them (examples/ paths).
        const test::CliResult r = test::run_cli_in(ROOFLINE_SOURCE_DIR, args);
        REQUIRE(r.code == 0);
        const std::string got = out.empty() ? r.out : test::slurp(out);
        // Exact equality; on a difference, say where it starts.
        if (got != expected) {
            std::size_t i = 0;
            while (i < got.size() && i < expected.size() && got[i] == expected[i]) ++i;
            const std::size_t from = i > 80 ? i - 80 : 0;
            FAIL("first difference at byte " << i << " of " << expected.size() << ":\n  expected ..." << expected.substr(from, 160)
                                             << "\n  got      ..." << got.substr(from, 160));
        }
    }
}
