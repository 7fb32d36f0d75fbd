// Bad command lines, one class each (docs/ROBUSTNESS.md, "Command lines"): every one ends in exit 2
// (3 where the GPU is what is missing) with a message naming the flag or the value and what was
// expected, before any work. Each row is a class, not an example: the same check guards every flag
// of that kind.
#include <catch2/catch.hpp>
#include <string>

#include "support.hpp"

namespace {

struct Case {
    const char* what;  // the class
    const char* args;
    int code;
    const char* message;  // part of what the user reads
};

const Case kCases[] = {
    {"a count of zero", "analyze gpt2-small --batch 0", 2, "--batch: expected a positive number, got '0'"},
    {"a negative count", "generate gpt2-small --prompt -3 --output 4", 2, "--prompt: expected a positive number, got '-3'"},
    {"a count that is not a number", "analyze gpt2-small --seq abc", 2, "--seq: expected a positive number, got 'abc'"},
    {"NaN where a number is expected", "serve gpt2-small --slo-ttft nan --prompt-len 8 --output-len 8", 2,
     "--slo-ttft: expected a non-negative number, got 'nan'"},
    {"a negative size", "analyze gpt2-small --mode training --cluster dgx-a100 --dp 2 --bucket-mb -1", 2,
     "--bucket-mb: expected a positive number, got '-1'"},
    {"a negative scale", "analyze gpt2-small --mode training --loss-scale -1", 2, "--loss-scale: expected a non-negative number, got '-1'"},
    {"an integer beyond 64 bits", "analyze gpt2-small --batch 99999999999999999999", 2, "overflow"},
    {"a sequence beyond the model's positions", "analyze gpt2-small --seq 100000", 2, "seq 100000 exceeds n_ctx 1024"},
    {"prompt and output beyond the model's positions", "generate gpt2-small --prompt 2000 --output 100", 2,
     "needs 2099 positions; gpt2-small has 1024"},
    {"a value outside a fixed set", "analyze gpt2-small --mode train", 2, "--mode: train not in {inference,training}"},
    {"a list value outside its set", "analyze gpt2-small --fuse-kinds bogus", 2, "--fuse-kinds: bogus not in"},
    {"an unknown optimizer", "analyze gpt2-small --mode training --optimizer lion", 2, "--optimizer: lion not in {sgd,adam,adamw,none}"},
    {"an integer outside its range", "analyze gpt2-small --streams 0", 2, "--streams: Value 0 not in range 1 to 1024"},
    {"a ZeRO stage beyond 3", "analyze gpt2-small --mode training --cluster dgx-a100 --dp 2 --zero 4", 2, "--zero"},
    {"an unknown hardware name", "analyze gpt2-small --hw nosuchchip", 2, "unknown hardware 'nosuchchip' (built in: a10"},
    {"an unknown cluster name", "analyze gpt2-small --mode training --cluster nosuch --dp 2", 2, "unknown cluster 'nosuch' (built in:"},
    {"an unknown subcommand", "bogus", 2, "unknown command 'bogus' (commands: analyze"},
    {"a missing required option", "search gpt2-small --gpus 8 --global-batch 8", 2, "--cluster is required"},
    {"a missing positional argument", "hw show", 2, "NAME is required"},
    {"an empty model name", "analyze ''", 2, "MODEL '' is neither a model file nor a built-in template"},
    {"a directory as the model", "analyze .", 2, "is neither a model file nor a built-in template"},
    {"--top that is neither a count nor 'all'", "analyze gpt2-small --top -1", 2, "--top: expected a positive number of ops or 'all'"},
    {"recomputation of an inference graph", "analyze gpt2-small --recompute selective", 2, "recomputation needs a training step"},
    {"--interleave without a pipeline", "analyze gpt2-small --mode training --cluster dgx-a100 --interleave 2", 2,
     "--interleave 2: needs --pp > 1"},
    {"--cp-comm without context parallelism", "analyze gpt2-small --mode training --cluster dgx-a100 --dp 2 --cp-comm allgather", 2,
     "--cp-comm allgather: needs --cp > 1"},
    {"--cp-comm alone", "plan gpt2-small --cp-comm ring", 2, "--cp-comm ring: needs --cp > 1"},
    {"a global batch that does not divide", "analyze gpt2-small --mode training --cluster dgx-a100 --dp 2 --global-batch 3", 2,
     "--global-batch 3: not a multiple of --batch 8 x --dp 2 = 16"},
    {"a decode step without a context", "analyze gpt2-small --phase decode", 2, "--phase decode needs --context N"},
    {"quantization outside an LLM inference step", "analyze gpt2-small --weights int4", 2,
     "--weights, --activations and --kv-cache quantize an LLM inference step"},
    {"a memory size that does not parse", "plan gpt2-small --memory-budget abc", 2,
     "--memory-budget: expected a positive size such as 40GiB"},
    {"a memory size of zero", "plan gpt2-small --memory-budget 0", 2, "--memory-budget: expected a positive size"},
    {"a length distribution with bounds reversed", "serve gpt2-small --prompt-len uniform:5:2 --output-len 8", 2,
     "uniform:A:B needs A <= B"},
    {"a length distribution with a missing parameter", "serve gpt2-small --prompt-len normal:8 --output-len 8", 2,
     "unknown distribution (N, uniform:A:B, normal:MEAN:STD or exp:MEAN)"},
    {"a length distribution with a negative mean", "serve gpt2-small --prompt-len exp:-3 --output-len 8", 2,
     "expected a positive number, got '-3'"},
    {"a request rate that is not a number", "serve gpt2-small --rate nan --prompt-len 8 --output-len 8", 2,
     "--rate: expected a positive number of requests a second or 'inf', got 'nan'"},
    {"a search with no valid configuration", "search gpt2-small --gpus 7 --cluster dgx-a100 --global-batch 8 -q", 2,
     "none of the 288 configurations is valid"},
    {"a host file that does not exist", "analyze gpt2-small --runtime eager --host does-not-exist.json", 2,
     "does-not-exist.json: cannot open file (it does not exist)"},
};

}  // namespace

TEST_CASE("bad command lines: exit 2 naming the flag and what was expected", "[cli][robustness]") {
    for (const Case& c : kCases) {
        INFO(c.what << ": roofline " << c.args);
        const test::CliResult r = test::run_cli(c.args);
        INFO(r.out);
        CHECK(r.code == c.code);
        CHECK_THAT(r.out, Catch::Contains(c.message));
    }
}

TEST_CASE("measure and calibrate without a GPU: exit 3 naming why", "[cli][robustness]") {
    // roofline links no CUDA library; it checks the options, then hands the command to
    // roofline-gpu beside it, which finds no device here (or reports that it is not built).
    for (const char* args : {"measure gpt2-small -o measured.json", "calibrate --quick -o spec.json"}) {
        INFO(args);
        const test::CliResult r = test::run_cli(std::string(args));
        INFO(r.out);
        CHECK(r.code == 3);
        CHECK_THAT(r.out, Catch::Contains("roofline: no GPU:"));
    }
    // Bad input is still found before looking for a GPU.
    const test::CliResult bad = test::run_cli("measure gpt2-small --batch 0 -o measured.json");
    CHECK(bad.code == 2);
}
