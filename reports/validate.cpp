#include "reports/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>

#include "model/autodiff.hpp"
#include "model/inference.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "ops/grad.hpp"
#include "ops/op_rule.hpp"
#include "reports/compare.hpp"
#include "reports/csv.hpp"
#include "reports/report.hpp"
#include "reports/units.hpp"
#include "sim/analysis.hpp"
#include "sim/fitted.hpp"
#include "sim/hardware.hpp"
#include "sim/plan.hpp"
#include "sim/recompute.hpp"

namespace roofline {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

std::vector<std::string> ValidateOptions::default_fitting_gpus() {
    return {"NVIDIA A100-PCIE-40GB", "Tesla P100-PCIE-16GB", "Tesla P4", "Tesla T4", "Tesla V100-PCIE-32GB"};
}

const std::map<std::string, std::string>& validate_device_table() {
    static const std::map<std::string, std::string> table = {{"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"},
                                                             {"Tesla V100-PCIE-32GB", "v100-pcie-32gb"},
                                                             {"Tesla P100-PCIE-16GB", "p100-pcie-16gb"},
                                                             {"Tesla T4", "t4"},
                                                             {"Tesla P4", "p4"},
                                                             {"NVIDIA H100 80GB HBM3", "h100-sxm"},
                                                             {"NVIDIA H200", "h200"}};
    return table;
}

double validation_quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

// ---------------------------------------------------------------------------------------------
// Names: devices, ops, families.

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The public files spell one device "NVIDIA A100-PCIE-40GB" (per-op) and "NVIDIA_A100-PCIE-40GB"
// (end to end): '_' reads as ' '.
std::string device_key(std::string_view raw) {
    std::string s(trimmed(raw));
    std::replace(s.begin(), s.end(), '_', ' ');
    return s;
}

const char* const kFamilies[] = {"matmul", "conv", "softmax", "layernorm", "elementwise", "other", "e2e"};

int family_rank(std::string_view f) {
    for (int i = 0; i < 7; ++i)
        if (f == kFamilies[i]) return i;
    return 7;
}

// The per-op files: OPName, its validation family and its shape columns in file order.
struct OpColumns {
    std::string_view op, family;
    std::vector<std::string_view> cols;
};

const std::vector<OpColumns>& op_table() {
    static const std::vector<OpColumns> table = {
        {"linear", "matmul", {"B", "M", "N", "K"}},
        {"bmm", "matmul", {"B", "M", "N", "K"}},
        {"conv", "conv", {"B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"}},
        {"softmax", "softmax", {"B", "H"}},
        {"ln", "layernorm", {"B", "H"}},
        {"add", "elementwise", {"B", "H"}},
        {"mul", "elementwise", {"B", "H"}},
        {"div", "elementwise", {"B", "H"}},
        {"pow", "elementwise", {"B", "H"}},
        {"gelu", "elementwise", {"B", "H"}},
        {"relu", "elementwise", {"B", "H"}},
        {"tanh", "elementwise", {"B", "H"}},
    };
    return table;
}

const OpColumns* find_op(std::string_view op) {
    for (const OpColumns& c : op_table())
        if (c.op == op) return &c;
    return nullptr;
}

std::string op_names() {
    std::string s;
    for (const OpColumns& c : op_table()) s += (s.empty() ? "" : ", ") + std::string(c.op);
    return s;
}

// The validation family of a measured node's op kind (measure JSONs; backward kinds with theirs).
std::string node_family(const std::string& op) {
    if (op == "linear" || op == "matmul") return "matmul";
    if (op.rfind("conv2d", 0) == 0) return "conv";
    if (op.rfind("softmax", 0) == 0) return "softmax";
    if (op.rfind("layernorm", 0) == 0) return "layernorm";
    const auto kind = parse_op(op);
    if (kind && rule_of(*kind).family == OpFamily::elementwise) return "elementwise";
    return "other";
}

bool selected(const ValidateOptions& opt, std::string_view op, std::string_view family) {
    if (opt.families.empty()) return true;
    return std::any_of(opt.families.begin(), opt.families.end(), [&](const std::string& f) { return f == op || f == family; });
}

void check_families(const ValidateOptions& opt) {
    for (const std::string& f : opt.families) {
        if (family_rank(f) < 7 || find_op(f) != nullptr || parse_op(f)) continue;
        throw InputError("--families: unknown family or op '" + f +
                         "' (families: matmul, conv, softmax, layernorm, elementwise, other, e2e; ops: " + op_names() + ")");
    }
}

std::string shape_text(const ValidationCase& c) {
    if (!c.shape.empty()) return c.shape;
    const OpColumns* spec = find_op(c.op);
    std::string s;
    for (std::size_t i = 0; spec != nullptr && i < spec->cols.size() && i < c.dims.size(); ++i)
        s += fmt::format("{}{}={}", s.empty() ? "" : " ", spec->cols[i], c.dims[i]);
    if (c.op == "conv" && c.dims.size() == 13) {  // conv_extras, where they differ from the public rows'
        if (c.dims[7] != 1) s += fmt::format(" Groups={}", c.dims[7]);
        if (c.dims[8] != c.dims[3] || c.dims[9] != c.dims[4] || c.dims[10] != c.dims[6])
            s += fmt::format(" Kernel_W={} Input_W={} Padding_W={}", c.dims[8], c.dims[9], c.dims[10]);
        if (c.dims[11] == 0) s += " Bias=0";
        if (c.dims[12] != 0) s += " Direction=backward";
    }
    return s;
}

// Indices 0..n-1 thinned to at most k, evenly spaced (deterministic; all when k is 0 or >= n).
std::vector<std::size_t> evenly_spaced(std::size_t n, std::size_t k) {
    std::vector<std::size_t> idx;
    if (k == 0 || k >= n) {
        idx.resize(n);
        std::iota(idx.begin(), idx.end(), 0);
        return idx;
    }
    for (std::size_t i = 0; i < k; ++i) idx.push_back(i * n / k);
    return idx;
}

// Keeps at most k of the items of each group (key(item)), evenly spaced in order; order kept.
template <class T, class Key>
std::vector<T> thin_groups(const std::vector<T>& items, std::size_t k, Key key) {
    if (k == 0) return items;
    std::map<std::string, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < items.size(); ++i) groups[key(items[i])].push_back(i);
    std::vector<bool> keep(items.size(), false);
    for (const auto& [name, members] : groups)
        for (std::size_t j : evenly_spaced(members.size(), k)) keep[members[j]] = true;
    std::vector<T> out;
    for (std::size_t i = 0; i < items.size(); ++i)
        if (keep[i]) out.push_back(items[i]);
    return out;
}

// ---------------------------------------------------------------------------------------------
// CSV (RFC 4180: quoted fields with "" escapes, which may hold commas and newlines).

struct Csv {
    std::string file;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::size_t> lines;  // the line each row starts on (the header is line 1)

    std::optional<std::size_t> find(std::string_view col) const {
        for (std::size_t i = 0; i < header.size(); ++i)
            if (trimmed(header[i]) == col) return i;
        return std::nullopt;
    }
    std::string where(std::size_t r) const { return fmt::format("{}: row {} (line {})", file, r + 1, lines[r]); }
};

Csv read_csv(const std::string& path) {
    const std::string text = read_input_file(path, kMaxJsonBytes);
    Csv csv;
    csv.file = path;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false;
    std::size_t line = 1, row_line = 1, quote_line = 0;
    auto end_row = [&] {
        row.push_back(std::move(field));
        field.clear();
        if (!(row.size() == 1 && row[0].empty())) {  // blank lines are not rows
            if (csv.header.empty()) {
                csv.header = std::move(row);
            } else {
                csv.rows.push_back(std::move(row));
                csv.lines.push_back(row_line);
            }
        }
        row.clear();
    };
    for (std::size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c != '"') {
                line += c == '\n' ? 1 : 0;
                field += c;
            } else if (i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else {
                quoted = false;
            }
        } else if (c == '"') {
            quoted = true;
            quote_line = line;
        } else if (c == ',') {
            row.push_back(std::move(field));
            field.clear();
        } else if (c == '\n') {
            end_row();
            row_line = ++line;
        } else if (c != '\r') {
            field += c;
        }
    }
    if (quoted) throw InputError(fmt::format("{}: line {}: a quoted field is never closed", path, quote_line));
    if (!field.empty() || !row.empty()) end_row();
    if (csv.header.empty()) throw InputError(path + ": empty file (expected a header line)");
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
        if (csv.rows[r].size() != csv.header.size())
            throw InputError(fmt::format("{}: {} fields, the header has {}", csv.where(r), csv.rows[r].size(), csv.header.size()));
    }
    return csv;
}

std::size_t need_column(const Csv& csv, std::string_view col) {
    const auto c = csv.find(col);
    if (!c) throw InputError(fmt::format("{}: row 0 (line 1, the header): missing column '{}'", csv.file, col));
    return *c;
}

double positive_number(const Csv& csv, std::size_t r, std::size_t col) {
    const std::string& text = csv.rows[r][col];
    const std::string_view s = trimmed(text);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
        throw InputError(fmt::format("{}: column '{}': '{}' is not a number", csv.where(r), csv.header[col], text));
    }
    if (v <= 0) throw InputError(fmt::format("{}: column '{}': {} is not positive", csv.where(r), csv.header[col], text));
    return v;
}

std::int64_t integer(const Csv& csv, std::size_t r, std::size_t col, std::int64_t min) {
    const std::string& text = csv.rows[r][col];
    const std::string_view s = trimmed(text);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
        throw InputError(fmt::format("{}: column '{}': '{}' is not an integer", csv.where(r), csv.header[col], text));
    }
    if (v < min) throw InputError(fmt::format("{}: column '{}': {} is below {}", csv.where(r), csv.header[col], text, min));
    return v;
}

// ---------------------------------------------------------------------------------------------
// Loading.

// Optimizer::none (loss.backward() alone, what the public end-to-end training rows time) where this
// build has it.
// TODO(issue #15): Optimizer::none is being added to model/autodiff.hpp; until a build has it the
// cheapest update stands in (SGD without momentum or weight decay: one pass over each parameter).
template <class E>
constexpr E backward_only_optimizer() {
    if constexpr (requires { E::none; })
        return E::none;
    else
        return E::sgd;
}

class Loader {
public:
    Loader(const ValidateOptions& opt, MeasurementSet& set) : opt_(opt), set_(set) {
        for (const auto& [device, spec] : opt.hw_map) hw_map_[device_key(device)] = spec;
    }

    // One file: a CSV (per-op or end to end) or a measure JSON.
    void file(const std::string& f) {
        if (fs::path(f).extension() == ".json")
            measurement(f);
        else
            csv_file(f);
    }

private:
    std::string spec_of(const std::string& gpu, const std::string& raw, const std::string& where) const {
        if (auto it = hw_map_.find(gpu); it != hw_map_.end()) return it->second;
        const auto& table = validate_device_table();
        if (auto it = table.find(gpu); it != table.end()) return it->second;
        std::string known;
        for (const auto& [d, s] : table) known += (known.empty() ? "" : ", ") + d;
        throw InputError(where + ": unknown device '" + raw + "' (known: " + known +
                         "; map it to a hardware spec with --hw-map 'DEVICE=SPEC')");
    }

    void csv_file(const std::string& file) {
        const Csv csv = read_csv(file);
        if (csv.find("e2e_ms"))
            e2e_csv(csv);
        else if (csv.find("OPName"))
            op_csv(csv);
        else
            throw InputError(file +
                             ": row 0 (line 1, the header): neither a per-op CSV (OPName, Latency_ms, Device, shape columns) nor an "
                             "end-to-end CSV (device, model, mode, seq, batch, e2e_ms)");
    }

    void op_csv(const Csv& csv) {
        const std::size_t c_op = need_column(csv, "OPName"), c_lat = need_column(csv, "Latency_ms"), c_dev = need_column(csv, "Device");
        std::map<std::string_view, std::vector<std::size_t>> shape_cols;
        const bool has_pow = parse_op("pow").has_value();
        std::vector<ValidationCase> cases;
        cases.reserve(csv.rows.size());
        for (std::size_t r = 0; r < csv.rows.size(); ++r) {
            const std::vector<std::string>& row = csv.rows[r];
            const OpColumns* spec = find_op(trimmed(row[c_op]));
            if (spec == nullptr) throw InputError(csv.where(r) + ": unknown op '" + row[c_op] + "' (OPName: " + op_names() + ")");
            std::vector<std::size_t>& cols = shape_cols[spec->op];
            if (cols.empty()) {
                for (std::string_view col : spec->cols) {
                    const auto c = csv.find(col);
                    if (!c)
                        throw InputError(fmt::format("{}: op '{}' needs column '{}', which the header lacks", csv.where(r), spec->op, col));
                    cols.push_back(*c);
                }
            }
            ValidationCase c;
            c.gpu = device_key(row[c_dev]);
            c.spec = spec_of(c.gpu, row[c_dev], csv.where(r));
            c.measured_s = positive_number(csv, r, c_lat) * 1e-3;
            for (std::size_t k = 0; k < cols.size(); ++k) c.dims.push_back(integer(csv, r, cols[k], spec->cols[k] == "Padding" ? 0 : 1));
            if (spec->op == "conv") conv_extras(csv, r, c.dims);
            if (!selected(opt_, spec->op, spec->family)) continue;
            if (spec->op == "pow" && !has_pow) {
                ++set_.skipped["pow"];
                set_.skip_reason["pow"] = "no op 'pow' in this build's vocabulary";
                continue;
            }
            c.file = csv.file;
            c.row = static_cast<std::int64_t>(r + 1);
            c.line = static_cast<std::int64_t>(csv.lines[r]);
            c.op = spec->op;
            c.family = spec->family;
            cases.push_back(std::move(c));
        }
        add(csv.file, "op-csv", csv.rows.size(), std::move(cases));
    }

    // The optional columns of a conv row, appended to its dims in this order: Groups (default 1),
    // Kernel_W, Input_W and Padding_W (non-square; default the square column), Bias (1: nn.Conv2d
    // with a bias, the public rows; 0: F.conv2d without) and Direction (forward, or backward: the
    // input and weight gradients of one autograd call) as 0/1.
    static void conv_extras(const Csv& csv, std::size_t r, std::vector<std::int64_t>& d) {
        const auto opt = [&](std::string_view col, std::int64_t fallback, std::int64_t min) {
            const auto c = csv.find(col);
            return c && !trimmed(csv.rows[r][*c]).empty() ? integer(csv, r, *c, min) : fallback;
        };
        d.push_back(opt("Groups", 1, 1));
        d.push_back(opt("Kernel_W", d[3], 1));
        d.push_back(opt("Input_W", d[4], 1));
        d.push_back(opt("Padding_W", d[6], 0));
        d.push_back(opt("Bias", 1, 0));
        std::int64_t backward = 0;
        if (const auto c = csv.find("Direction")) {
            const std::string_view v = trimmed(csv.rows[r][*c]);
            if (v != "forward" && v != "backward" && !v.empty())
                throw InputError(csv.where(r) + ": column 'Direction': '" + std::string(v) + "' (expected forward or backward)");
            backward = v == "backward" ? 1 : 0;
        }
        d.push_back(backward);
        if (d[1] % d[7] != 0 || d[2] % d[7] != 0)
            throw InputError(csv.where(r) + ": column 'Groups': " + std::to_string(d[7]) + " does not divide the channels " +
                             std::to_string(d[1]) + " -> " + std::to_string(d[2]));
    }

    void e2e_csv(const Csv& csv) {
        const std::size_t c_dev = need_column(csv, "device"), c_model = need_column(csv, "model"), c_mode = need_column(csv, "mode"),
                          c_seq = need_column(csv, "seq"), c_batch = need_column(csv, "batch"), c_ms = need_column(csv, "e2e_ms");
        const fs::path configs = opt_.configs_dir.empty() ? fs::path(csv.file).parent_path() / "configs" : fs::path(opt_.configs_dir);
        std::vector<ValidationCase> cases;
        for (std::size_t r = 0; r < csv.rows.size(); ++r) {
            const std::vector<std::string>& row = csv.rows[r];
            ValidationCase c;
            c.gpu = device_key(row[c_dev]);
            c.spec = spec_of(c.gpu, row[c_dev], csv.where(r));
            const std::string model(trimmed(row[c_model]));
            if (model.empty() || model.find('/') != std::string::npos)
                throw InputError(csv.where(r) + ": column 'model': '" + row[c_model] + "' is not a config name");
            c.mode = std::string(trimmed(row[c_mode]));
            if (c.mode != "inf" && c.mode != "train")
                throw InputError(csv.where(r) + ": column 'mode': '" + row[c_mode] + "' (expected inf or train)");
            const std::int64_t seq = integer(csv, r, c_seq, 1), batch = integer(csv, r, c_batch, 1);
            c.measured_s = positive_number(csv, r, c_ms) * 1e-3;
            if (!selected(opt_, "e2e", "e2e")) continue;
            c.file = csv.file;
            c.row = static_cast<std::int64_t>(r + 1);
            c.line = static_cast<std::int64_t>(csv.lines[r]);
            c.op = "e2e";
            c.family = "e2e";
            c.dims = {batch, seq};
            // A Hugging Face config.json, or an ONNX file of the model (a vision model: seq is its
            // image size, which the file fixes)
            c.config = (configs / (model + ".json")).string();
            if (std::error_code ec; !fs::is_regular_file(c.config, ec) && fs::is_regular_file(configs / (model + ".onnx"), ec))
                c.config = (configs / (model + ".onnx")).string();
            c.shape = fmt::format("{} {} batch={} seq={}", model, c.mode, batch, seq);
            cases.push_back(std::move(c));
        }
        add(csv.file, "e2e-csv", csv.rows.size(), std::move(cases));
    }

    void add(const std::string& file, const char* kind, std::size_t rows, std::vector<ValidationCase> cases) {
        set_.inputs.push_back({file, kind, rows});
        if (opt_.max_rows > 0) cases = thin_groups(cases, opt_.max_rows, [](const ValidationCase& c) { return c.gpu; });
        set_.cases = std::move(cases);  // one file per loader
    }

    void measurement(const std::string& file);

    const ValidateOptions& opt_;
    MeasurementSet& set_;
    std::map<std::string, std::string> hw_map_;  // normalised device -> spec
};

// ---- a `roofline measure` JSON: rebuilt as measure built it, predicted, joined by compare ----

std::string json_string(const json& obj, const char* key) {
    return obj.is_object() && obj.contains(key) && obj.at(key).is_string() ? obj.at(key).get<std::string>() : "";
}

// The MODEL argument the measurement was made with: a template name or a file, looked up as given
// and then relative to each directory above the measurement (the repository root, for the
// committed ones).
std::string measured_model_arg(const std::string& origin, const std::string& file) {
    const std::string prefix = "template '";
    if (origin.rfind(prefix, 0) == 0 && origin.size() > prefix.size() && origin.back() == '\'')
        return origin.substr(prefix.size(), origin.size() - prefix.size() - 1);
    std::error_code ec;
    if (fs::is_regular_file(origin, ec)) return origin;
    for (fs::path dir = fs::absolute(fs::path(file), ec).parent_path(); !dir.empty(); dir = dir.parent_path()) {
        if (fs::is_regular_file(dir / origin, ec)) return (dir / origin).string();
        if (dir == dir.parent_path()) break;
    }
    throw InputError(file + ": /model/origin: cannot find '" + origin + "' (the model this measurement ran)");
}

std::int64_t json_count(const json& obj, const char* key, const std::string& where) {
    if (!obj.contains(key) || !obj.at(key).is_number_integer() || obj.at(key).get<std::int64_t>() < 0)
        throw InputError(where + "/" + key + ": expected a non-negative integer");
    return obj.at(key).get<std::int64_t>();
}

// An LLM inference step (measure --phase), rebuilt from the measurement's `model.inference`
// record (cli/measure_commands.cpp) as `analyze --phase` builds it.
Graph measured_phase_graph(const json& model, const std::string& file) {
    const json& r = model.at("inference");
    const std::string where = file + ": /model/inference";
    if (!r.is_object()) throw InputError(where + ": expected an object");
    PhaseOptions p;
    const std::string phase = json_string(r, "phase");
    if (phase != "prefill" && phase != "decode") throw InputError(where + "/phase: expected \"prefill\" or \"decode\"");
    p.phase = phase == "decode" ? InferencePhase::decode : InferencePhase::prefill;
    if (p.phase == InferencePhase::decode) p.context = json_count(r, "context", where);
    if (r.contains("source")) p.source = json_count(r, "source", where);  // an encoder-decoder's decode step
    if (r.contains("quantization")) {
        const json& q = r.at("quantization");
        if (!q.is_object()) throw InputError(where + "/quantization: expected an object");
        p.quant.weights = json_string(q, "weights");
        p.quant.activations = json_string(q, "activations");
        p.quant.kv_cache = json_string(q, "kv_cache");
        p.quant.group_size = json_count(q, "group_size", where + "/quantization");
        check_quantization(p.quant);
    }
    ModelOverrides ov;
    ov.frozen_weights = true;
    const json dims = model.value("dims", json::object());
    if (dims.contains("batch") && dims["batch"].is_number_integer()) ov.batch = dims["batch"].get<std::int64_t>();
    if (const std::int64_t tokens = json_count(r, "tokens", where); tokens > 0) ov.seq = tokens;
    if (const std::string d = json_string(r, "dtype"); !d.empty()) {
        ov.dtype = parse_dtype(d);
        if (!ov.dtype) throw InputError(where + "/dtype: unknown dtype '" + d + "'");
    }
    ov.phase = p;
    const std::string m = json_string(r, "model");
    if (m.empty()) throw InputError(where + "/model: expected the MODEL argument measure was given");
    // A file as measure was given it (a path, a .json or .onnx), found relative to the measurement;
    // else a built-in template by name ("qwen2.5-1.5b": its dot is no extension).
    const std::string ext = fs::path(m).extension().string();
    const bool named_file = !is_template_name(m) && (m.find('/') != std::string::npos || ext == ".json" || ext == ".onnx");
    return load_model_arg(named_file ? measured_model_arg(m, file) : m, ov);
}

Graph measured_graph(const json& model, const std::string& file, TrainingOptions& t) {
    if (model.contains("inference")) return measured_phase_graph(model, file);
    ModelOverrides ov;
    const json dims = model.value("dims", json::object());
    if (dims.contains("batch") && dims["batch"].is_number_integer()) ov.batch = dims["batch"].get<std::int64_t>();
    if (dims.contains("seq") && dims["seq"].is_number_integer()) ov.seq = dims["seq"].get<std::int64_t>();
    const std::string arg = measured_model_arg(json_string(model, "origin"), file);
    Graph g = load_model_arg(arg, ov);
    if (const auto d = parse_dtype(json_string(model, "dtype")); d && *d != g.compute_dtype) {
        ov.dtype = d;
        g = load_model_arg(arg, ov);
    }
    if (json_string(model, "mode") == "training") {
        t.loss_scale = g.precision.loss_scale;  // as `roofline measure` builds the step (cli/graph_args.cpp)
        t.master_weights = g.precision.master_weights;
        g = build_training_step(g, t);
    }
    return g;
}

void Loader::measurement(const std::string& file) {
    const json m = read_json_file(file);
    if (!m.is_object() || json_string(m, "schema") != "roofline-measurement/1") {
        throw InputError(file + ": /schema: expected \"roofline-measurement/1\" (a `roofline measure -o` file)");
    }
    const std::string raw = json_string(m.value("device", json::object()), "name");
    const std::string gpu = device_key(raw), spec = spec_of(gpu, raw, file + ": /device/name");
    const json model = m.value("model", json::object());
    const json options = m.value("options", json::object());
    TrainingOptions t;
    const Graph g = measured_graph(model, file, t);
    Hardware hw;
    try {
        hw = resolve_hardware(spec);
    } catch (const InputError& e) {
        throw InputError(file + ": device '" + gpu + "' maps to hardware '" + spec + "': " + e.what());
    }
    std::optional<RecomputePlan> rp;
    const std::string recompute = json_string(options, "recompute").empty() ? "none" : json_string(options, "recompute");
    if (recompute != "none") {
        const auto s = parse_strategy(recompute);
        if (!s) throw InputError(file + ": /options/recompute: unknown strategy '" + recompute + "'");
        rp = plan_strategy(g, *s);
    }
    // measure --flash runs attention as one fused kernel: analyze --fuse-kinds flash.
    const bool flash = options.value("flash_attention", false);
    FusionOptions fo;
    fo.elementwise = fo.gemm_epilogue = fo.gemm_prologue = fo.reductions = false;
    // Steps timed before measure stopped tracing them carry the tracer's host time per launch.
    AnalysisOptions ao;
    ao.executor.traced = json_string(m.value("step", json::object()), "timing") != "untraced";
    const Evaluated e = evaluate_option(g, hw, rp, flash, ao, fo);
    const std::string mode = json_string(model, "mode");
    ReportContext ctx{*e.graph, hw, e.analysis, mode, mode == "training" ? &t : nullptr};
    if (e.fusion) ctx.fusion = &*e.fusion;
    ctx.recompute = recompute;
    const ordered_json cmp = compare_documents(report_json(ctx), "the prediction of " + file, m, file);
    std::vector<ValidationCase> cases;
    auto base = [&](std::int64_t row, const std::string& op, const std::string& family) {
        ValidationCase c;
        c.file = file, c.row = row, c.gpu = gpu, c.spec = spec, c.op = op, c.family = family, c.fixed = true;
        c.source = "measure";
        return c;
    };
    std::map<std::string, std::int64_t> node_row;
    const json& nodes = m.at("nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) node_row[json_string(nodes[i], "name")] = static_cast<std::int64_t>(i + 1);
    for (const ordered_json& k : cmp["kernels"]) {
        const std::string op = k["op"].get<std::string>(), family = node_family(op);
        if (!selected(opt_, op, family)) continue;
        ValidationCase c = base(node_row[k["name"].get<std::string>()], op, family);
        c.shape = k["name"].get<std::string>();
        c.measured_s = k["measured_s"].get<double>();
        c.predicted_s = k["predicted_s"].get<double>();
        if (c.measured_s > 0) cases.push_back(std::move(c));
    }
    if (selected(opt_, "e2e", "e2e")) {
        ValidationCase c = base(0, "e2e", "e2e");
        c.shape = fmt::format("{} {} step {}", json_string(model, "name"), mode, model.value("dims", json::object()).dump());
        c.measured_s = cmp["summary"]["measured_step_s"].get<double>();
        c.predicted_s = cmp["summary"]["predicted_step_s"].get<double>();
        if (c.measured_s > 0) cases.push_back(std::move(c));
    }
    set_.inputs.push_back({file, "measurement", nodes.size()});
    set_.cases = std::move(cases);
}

// ---------------------------------------------------------------------------------------------
// Prediction.

// One public row as a one-op graph, fp32, with the tensors nn.Linear, torch.bmm, nn.Conv2d,
// softmax, nn.LayerNorm and the elementwise ops read.
Graph op_graph(const ValidationCase& c) {
    const std::vector<std::int64_t>& d = c.dims;
    Graph g;
    g.name = c.op;
    auto in = [&](const char* name, Shape s) { return g.add_input(name, TensorDesc{std::move(s), DType::f32}); };
    auto par = [&](const char* name, Shape s) { return g.add_parameter(name, TensorDesc{std::move(s), DType::f32}); };
    NodeId n = kNoNode;
    const std::string& op = c.op;
    // The study's B, M, N, K: N is the reduced dimension and K the output's columns. Its launch
    // columns say so: on every GPU the GEMM kernel's grid x is ceil(K / tile) (output columns) and
    // grid y ceil(B*M / tile), in 12,291 of the 12,500 linear rows and 8,880 of the 12,500 bmm rows
    // (the others fit both readings or name no tile; none fits only K reduced); split-K grids (z > 1) come with a
    // long N.
    if (op == "linear") {  // nn.Linear(N, K): [B*M, N] x weight[K, N]^T + bias[K]
        n = g.add_node(op, OpKind::linear,
                       {in("x", {checked_mul(d[0], d[1], "rows"), d[2]}), par("weight", {d[3], d[2]}), par("bias", {d[3]})}, {}, {});
    } else if (op == "bmm") {  // B x [M, N] x [N, K]
        n = g.add_node(op, OpKind::matmul, {in("a", {d[0], d[1], d[2]}), in("b", {d[0], d[2], d[3]})}, {}, {});
    } else if (op == "conv") {  // B, C_in, C_out, kernel, input size, stride, padding, then conv_extras'
        Attrs a;
        a.set("stride", std::vector<std::int64_t>{d[5], d[5]});
        a.set("padding", std::vector<std::int64_t>{d[6], d[10]});
        a.set("groups", d[7]);
        const Shape x_shape{d[0], d[1], d[4], d[9]}, w_shape{d[2], d[1] / d[7], d[3], d[8]};
        if (d[12] == 0) {
            std::vector<TensorId> ins{in("x", x_shape), par("weight", w_shape)};
            if (d[11] != 0) ins.push_back(par("bias", {d[2]}));
            n = g.add_node(op, OpKind::conv2d, ins, a, {});
        } else {  // torch.autograd.grad(y, (x, w), dy): cuDNN's data and weight gradients, no bias
            const TensorId x = in("x", x_shape), w = par("weight", w_shape);
            const TensorDesc y = infer_outputs(OpKind::conv2d, std::vector<TensorDesc>{g.tensor(x).desc, g.tensor(w).desc}, a)[0];
            const TensorId dy = in("dy", y.shape);
            Attrs ai = a, aw = a;
            ai.set("input_shape", x_shape);
            aw.set("weight_shape", w_shape);
            const NodeId dx = g.add_node("conv.grad_input", OpKind::conv2d_grad_input, {dy, w}, ai, {});
            g.mark_output(g.node(dx).outputs[0]);
            n = g.add_node("conv.grad_weight", OpKind::conv2d_grad_weight, {dy, x}, aw, {});
            g.set_phase(dx, Phase::backward);  // one backward call: the autograd engine's start is paid once
            g.set_phase(n, Phase::backward);
        }
    } else if (op == "ln") {
        n = g.add_node(op, OpKind::layernorm, {in("x", {d[0], d[1]}), par("weight", {d[1]}), par("bias", {d[1]})}, {}, {});
    } else if (op == "softmax") {
        n = g.add_node(op, OpKind::softmax, {in("x", {d[0], d[1]})}, {}, {});
    } else if (op == "add" || op == "mul" || op == "div") {
        n = g.add_node(op, *parse_op(op), {in("a", {d[0], d[1]}), in("b", {d[0], d[1]})}, {}, {});
    } else if (op == "pow") {  // x ** y, two [B, H] tensors: the study's kernel is pow_tensor_tensor_kernel with three operands
        n = g.add_node(op, *parse_op("pow"), {in("x", {d[0], d[1]}), in("y", {d[0], d[1]})}, {}, {});
    } else if (op == "gelu") {  // PyTorch's default: exact (erf)
        n = g.add_node(op, OpKind::gelu, {in("x", {d[0], d[1]})}, attr("approximate", std::string("erf")), {});
    } else {  // relu, tanh
        n = g.add_node(op, *parse_op(op), {in("x", {d[0], d[1]})}, {}, {});
    }
    g.mark_output(g.node(n).outputs[0]);
    return g;
}

std::string e2e_key(const ValidationCase& c) { return fmt::format("{}|{}|{}|{}", c.config, c.mode, c.dims[0], c.dims[1]); }

Graph e2e_graph(const ValidationCase& c) {
    ModelOverrides ov;
    ov.batch = c.dims[0];
    if (fs::path(c.config).extension() != ".onnx") ov.seq = c.dims[1];
    ov.dtype = DType::f32;
    ov.eval = c.mode != "train";  // inference rows ran under model.eval(): no dropout
    std::error_code ec;
    if (!fs::is_regular_file(c.config, ec)) throw InputError("no config file " + c.config + " (give the directory with --configs)");
    Graph g = load_model_arg(c.config, ov);
    if (c.mode == "train") {   // forward + backward, no optimizer step (the public rows' README)
        add_stand_in_loss(g);  // an ONNX model: the mean of its logits, as the vision rows' loss
        TrainingOptions t;
        t.optimizer = backward_only_optimizer<Optimizer>();
        t.momentum = 0;
        t.weight_decay = 0;
        t.master_weights = false;
        g = build_training_step(g, t);
    }
    return g;
}

unsigned thread_count(const ValidateOptions& opt) {
    const unsigned hw = std::thread::hardware_concurrency();
    return std::max(1u, opt.threads > 0 ? opt.threads : hw);
}

// Runs worker() on `threads` threads (the caller's included); each pulls work from shared state.
void on_threads(unsigned threads, const std::function<void()>& worker) {
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
}

class Predictor {
public:
    Predictor(const std::vector<ValidationCase>& cases, unsigned threads, const std::map<std::string, EagerHost>& hosts)
        : cases_(cases), threads_(threads) {
        for (const auto& [device, host] : hosts) {
            AnalysisOptions o;
            apply_eager_host(host, o);
            hosts_.emplace(device.empty() ? device : device_key(device), o);
        }
        for (const ValidationCase& c : cases) {
            if (c.fixed || hw_.count(c.spec)) continue;
            try {
                hw_.emplace(c.spec, resolve_hardware(c.spec));
            } catch (const InputError& e) {
                throw InputError("device '" + c.gpu + "' maps to hardware '" + c.spec + "': " + e.what());
            }
        }
        // End-to-end graphs are built once each, by the first thread that needs one.
        for (const ValidationCase& c : cases)
            if (!c.fixed && c.op == "e2e") graphs_.try_emplace(e2e_key(c));
    }

    // cases[idx[i]] predicted with the fitted terms at `values` -> out[i]; errors[i] says why not.
    // keep_costs: keep the kernel costs for the next call (a fit re-predicts the same cases); off,
    // one-op cases are costed without a cache (their shapes do not repeat on a GPU).
    // kernels: when given, each op case's modelled launch (describe_launch) -> (*kernels)[i].
    std::vector<double> run(const std::vector<std::size_t>& idx, const std::vector<double>& values,
                            std::vector<std::string>* errors = nullptr, bool keep_costs = true,
                            std::vector<std::string>* kernels = nullptr) const {
        std::vector<double> out(idx.size(), 0.0);
        if (errors != nullptr) errors->assign(idx.size(), "");
        if (kernels != nullptr) kernels->assign(idx.size(), "");
        AnalysisOptions base;
        base.runtime = Runtime::eager;
        const auto terms = fitted_terms();
        for (std::size_t t = 0; t < terms.size(); ++t) terms[t].ref(base) = values[t];
        // Whole models first: the longest items start early and the short ones fill in.
        std::vector<std::size_t> order(idx.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return cases_[idx[i]].op == "e2e"; });
        std::size_t models = 0;
        for (std::size_t i : idx) models += cases_[i].op == "e2e" ? 1 : 0;
        const std::size_t units = models + (idx.size() - models + 63) / 64;  // a thread per model or per 64 ops at most
        const unsigned n = std::min<unsigned>(threads_, static_cast<unsigned>(std::max<std::size_t>(1, units)));
        // Kernel costs stay valid while the terms the kernel model reads keep their values (the
        // eager host terms of a fit do not touch them): each thread keeps its caches across calls,
        // and a case always goes to the same thread (by its index), so they hit.
        const std::vector<double> kernel_key = kernel_term_values(values);
        std::atomic<unsigned> slot{0};
        std::atomic<std::size_t> next{0};
        on_threads(n, [&] {
            const unsigned t = slot++;
            ThreadCaches local;
            ThreadCaches& tc = keep_costs ? caches_[t] : local;
            if (tc.key != kernel_key) {
                tc.by_spec.clear();
                tc.key = kernel_key;
            }
            auto one = [&](std::size_t i) {
                const ValidationCase& c = cases_[idx[i]];
                try {
                    out[i] = predict(c, base, tc.by_spec, keep_costs || c.op == "e2e", kernels != nullptr ? &(*kernels)[i] : nullptr);
                } catch (const std::exception& e) {
                    if (errors != nullptr) (*errors)[i] = e.what();
                }
            };
            if (keep_costs) {
                for (const std::size_t i : order)
                    if (idx[i] % n == t) one(i);
            } else {  // nothing to reuse: whichever thread is free takes the next case
                for (std::size_t k = next++; k < order.size(); k = next++) one(order[k]);
            }
        });
        return out;
    }

private:
    struct Prepared {
        std::once_flag built;
        std::shared_ptr<const Graph> graph;
        std::string error;
    };
    struct ThreadCaches {
        std::vector<double> key;  // the kernel-model term values the costs were computed with
        std::map<std::string, std::shared_ptr<KernelCostCache>> by_spec;
    };

    // The values of the fitted terms the kernel model reads: those in AnalysisOptions::gpu, which
    // analyze() costs kernels with (with the hardware and the runtime); the others (the eager
    // host terms) only enter the schedule and the single-call latency.
    static std::vector<double> kernel_term_values(const std::vector<double>& values) {
        AnalysisOptions o;
        const auto* lo = reinterpret_cast<const char*>(&o.gpu);
        const auto* hi = lo + sizeof(o.gpu);
        std::vector<double> key;
        const auto terms = fitted_terms();
        for (std::size_t t = 0; t < terms.size(); ++t) {
            const auto* at = reinterpret_cast<const char*>(&terms[t].ref(o));
            if (!std::less<const char*>()(at, lo) && std::less<const char*>()(at, hi)) key.push_back(values[t]);
        }
        return key;
    }

    double predict(const ValidationCase& c, const AnalysisOptions& base, std::map<std::string, std::shared_ptr<KernelCostCache>>& caches,
                   bool cached, std::string* kernel = nullptr) const {
        if (c.fixed) return c.predicted_s;
        AnalysisOptions o = base;
        auto host = hosts_.find(c.gpu);
        if (host == hosts_.end()) host = hosts_.find("");
        if (host != hosts_.end()) {
            o.eager_op_host_s = host->second.eager_op_host_s;
            o.eager_cudnn_host_s = host->second.eager_cudnn_host_s;
            o.eager_timing_host_s = host->second.eager_timing_host_s;
            o.eager_backward_call_host_s = host->second.eager_backward_call_host_s;
        }
        if (cached) {
            std::shared_ptr<KernelCostCache>& cache = caches[c.spec];
            if (!cache) cache = make_kernel_cost_cache();
            o.cost_cache = cache.get();
        }
        const Hardware& hw = hw_.at(c.spec);
        if (c.op != "e2e") {
            // One op timed by CUDA events around a call in a Python loop: its kernels and the
            // host's dispatch of the call overlap across calls (sim/analysis.hpp); every call
            // streams the same buffers, so a working set that fits in L2 stays there.
            o.gpu.warm_l2 = true;
            const Graph g = op_graph(c);
            const Analysis a = analyze(g, hw, o);
            if (kernel != nullptr)
                for (const OpAnalysis& op : a.ops)
                    if (op.kernel) *kernel += (kernel->empty() ? "" : "; ") + describe_launch(*op.kernel);
            return single_call_latency_s(g, a, o);
        }
        Prepared& p = graphs_.at(e2e_key(c));
        std::call_once(p.built, [&] {
            try {
                p.graph = std::make_shared<const Graph>(e2e_graph(c));
            } catch (const std::exception& e) {
                p.error = e.what();
            }
        });
        if (!p.graph) throw InputError(p.error);
        return analyze(*p.graph, hw, o).schedule.step_time_s;
    }

    const std::vector<ValidationCase>& cases_;
    unsigned threads_;
    std::map<std::string, AnalysisOptions> hosts_;  // device ("" for every other) -> its host's eager terms
    std::map<std::string, Hardware> hw_;
    mutable std::map<std::string, Prepared> graphs_;  // entries made by the constructor; each filled once
    mutable std::vector<ThreadCaches> caches_ = std::vector<ThreadCaches>(threads_);
};

// ---------------------------------------------------------------------------------------------
// Fitting.

// Each fitted term's value: --term's where given, else the compiled-in one, or with `mid` the
// geometric middle of the term's search range (ValidateOptions::fit_start).
std::vector<double> term_values(const ValidateOptions& opt, bool mid) {
    AnalysisOptions o;
    std::vector<double> v;
    for (const FittedTerm& t : fitted_terms()) {
        const auto it = opt.term_values.find(std::string(t.name));
        v.push_back(it != opt.term_values.end() ? it->second : mid ? std::sqrt(t.lo * t.hi) : t.ref(o));
    }
    return v;
}

std::vector<double> default_values(const ValidateOptions& opt) { return term_values(opt, false); }

// Where a fit starts (ValidateOptions::fit_start).
std::vector<double> start_values(const ValidateOptions& opt, ValidateOptions::FitStart start) {
    return term_values(opt, start == ValidateOptions::FitStart::mid);
}

const char* start_name(ValidateOptions::FitStart s) { return s == ValidateOptions::FitStart::mid ? "mid" : "compiled"; }

bool term_applies(const FittedTerm& t, const ValidationCase& c) {
    std::string_view rest = t.families;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view f = trimmed(rest.substr(0, comma));
        if (f == "*" || f == c.op || f == c.family) return true;
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return false;
}

// The fit's objective: the mean over (GPU, family) groups of the median |log(predicted/measured)|.
double objective(const std::vector<ValidationCase>& cases, const std::vector<std::size_t>& idx, const std::vector<double>& pred) {
    std::map<std::pair<std::string_view, std::string_view>, std::vector<double>> groups;
    for (std::size_t i = 0; i < idx.size(); ++i) {
        const ValidationCase& c = cases[idx[i]];
        if (pred[i] > 0) groups[{c.gpu, c.family}].push_back(std::fabs(std::log(pred[i] / c.measured_s)));
    }
    if (groups.empty()) return 0;
    double sum = 0;
    for (const auto& [key, v] : groups) sum += validation_quantile(v, 0.5);
    return sum / static_cast<double>(groups.size());
}

// Golden-section search for the minimum of f on [a, b], starting from the value at x0; the best
// point evaluated, x0 on ties (a flat objective leaves a term where it was).
double golden_section(const std::function<double(double)>& f, double a, double b, double x0, double tol) {
    const double r = (std::sqrt(5.0) - 1) / 2;
    double best_x = x0, best_f = f(x0);
    auto eval = [&](double x) {
        const double v = f(x);
        if (v < best_f) best_x = x, best_f = v;
        return v;
    };
    double c = b - r * (b - a), d = a + r * (b - a);
    double fc = eval(c), fd = eval(d);
    while (b - a > tol) {
        if (fc <= fd) {
            b = d, d = c, fd = fc;
            c = b - r * (b - a);
            fc = eval(c);
        } else {
            a = c, c = d, fc = fd;
            d = a + r * (b - a);
            fd = eval(d);
        }
    }
    return best_x;
}

struct FitResult {
    std::vector<double> values;
    double before = 0, after = 0;
    std::size_t cases = 0;  // cases the objective used
};

constexpr double kLogTolerance = 0.01;  // a fitted value to 1%

// Fits every term on the pool's cases by coordinate descent from `start`; `before` is the objective
// at `reference` (the compiled-in values, or --term's).
FitResult fit_terms(const Predictor& p, const std::vector<ValidationCase>& cases, const std::vector<std::size_t>& pool,
                    const std::vector<double>& start, const std::vector<double>& reference, const ValidateOptions& opt) {
    const auto terms = fitted_terms();
    std::vector<std::vector<std::size_t>> term_cases(terms.size());
    std::set<std::size_t> all;
    for (std::size_t t = 0; t < terms.size(); ++t) {
        std::vector<std::size_t> mine;
        for (std::size_t i : pool)
            if (term_applies(terms[t], cases[i])) mine.push_back(i);
        std::vector<std::size_t> ops, models;
        for (std::size_t i : mine) (cases[i].op == "e2e" ? models : ops).push_back(i);
        auto key = [&](std::size_t i) { return cases[i].gpu + "|" + cases[i].op; };
        ops = thin_groups(ops, opt.fit_sample, key);
        models = thin_groups(models, opt.fit_sample_e2e, key);
        std::merge(ops.begin(), ops.end(), models.begin(), models.end(), std::back_inserter(term_cases[t]));
        all.insert(term_cases[t].begin(), term_cases[t].end());
    }
    const std::vector<std::size_t> union_cases(all.begin(), all.end());
    // Objectives already computed, by case set and values: each term's search starts where the
    // previous one ended, on the same cases when their families are the same.
    std::map<std::pair<const std::vector<std::size_t>*, std::vector<double>>, double> memo;
    auto cost = [&](const std::vector<std::size_t>& set, const std::vector<double>& v) {
        const std::vector<std::size_t>* id = &set;
        for (const auto& tc : term_cases)
            if (tc == set) id = &tc;
        const auto [it, fresh] = memo.try_emplace({id, v}, 0.0);
        if (fresh) it->second = objective(cases, set, p.run(set, v));
        return it->second;
    };
    FitResult r;
    r.values = start;
    r.cases = union_cases.size();
    r.before = cost(union_cases, reference);
    for (int sweep = 0; sweep < std::max(1, opt.sweeps); ++sweep) {
        double moved = 0;
        for (std::size_t t = 0; t < terms.size(); ++t) {
            if (term_cases[t].empty()) continue;
            auto f = [&](double x) {
                std::vector<double> v = r.values;
                v[t] = std::exp(x);
                return cost(term_cases[t], v);
            };
            const double x = golden_section(f, std::log(terms[t].lo), std::log(terms[t].hi), std::log(r.values[t]), kLogTolerance);
            moved = std::max(moved, std::fabs(x - std::log(r.values[t])));
            r.values[t] = std::exp(x);
        }
        if (terms.size() == 1 || moved < kLogTolerance) break;  // one term: a second sweep repeats the first
    }
    r.after = cost(union_cases, r.values);
    return r;
}

ordered_json values_json(const std::vector<double>& values) {
    ordered_json o = ordered_json::object();
    const auto terms = fitted_terms();
    for (std::size_t t = 0; t < terms.size(); ++t) o[std::string(terms[t].name)] = values[t];
    return o;
}

// ---------------------------------------------------------------------------------------------
// Statistics and the document.

bool usable(const ValidationCase& c) { return c.error.empty() && c.predicted_s > 0 && c.measured_s > 0; }
double error_of(const ValidationCase& c) { return c.predicted_s / c.measured_s - 1; }
double log_error(const ValidationCase& c) { return std::fabs(std::log(c.predicted_s / c.measured_s)); }

struct Stats {
    std::size_t n = 0;
    double median = 0, p90 = 0, bias = 0;  // fractions
};

Stats stats_of(const std::vector<const ValidationCase*>& cs) {
    std::vector<double> abs, sig;
    for (const ValidationCase* c : cs) {
        sig.push_back(error_of(*c));
        abs.push_back(std::fabs(sig.back()));
    }
    return {cs.size(), validation_quantile(abs, 0.5), validation_quantile(abs, 0.9), validation_quantile(sig, 0.5)};
}

ordered_json case_json(const ValidationCase& c) {
    ordered_json j;
    j["file"] = c.file;
    j["row"] = c.row;
    j["gpu"] = c.gpu;
    j["set"] = c.set;
    j["source"] = c.source;
    j["op"] = c.op;
    j["family"] = c.family;
    j["shape"] = shape_text(c);
    j["measured_s"] = c.measured_s;
    j["predicted_s"] = c.predicted_s;
    j["error_pct"] = 100 * error_of(c);
    return j;
}

void put_stats(ordered_json& j, const Stats& s) {
    j["n"] = s.n;
    j["median_abs_error_pct"] = 100 * s.median;
    j["p90_abs_error_pct"] = 100 * s.p90;
    j["bias_pct"] = 100 * s.bias;
}

// The worst k by |log(predicted/measured)|, ties by input order.
std::vector<const ValidationCase*> worst_of(const std::vector<const ValidationCase*>& cs, std::size_t k) {
    std::vector<std::pair<double, std::size_t>> keyed;
    keyed.reserve(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i) keyed.emplace_back(-log_error(*cs[i]), i);
    k = std::min(k, keyed.size());
    std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(k), keyed.end());
    std::vector<const ValidationCase*> out;
    for (std::size_t i = 0; i < k; ++i) out.push_back(cs[keyed[i].second]);
    return out;
}

// A table row: one GPU, set and source, and a family (in kFamilies order) or op.
struct GroupKey {
    std::string gpu, set, source;
    int rank = 0;
    std::string name;  // the family or the op
    auto operator<=>(const GroupKey&) const = default;
};

struct Groups {
    std::map<GroupKey, std::vector<const ValidationCase*>> by_family, by_op;
    std::map<std::string, std::string> spec;  // gpu -> spec
};

Groups group_cases(const std::vector<ValidationCase>& cases) {
    Groups g;
    const ValidationCase* prev = nullptr;  // cases come in runs of one file and device: look a group up once per run
    std::vector<const ValidationCase*>* family = nullptr;
    std::vector<const ValidationCase*>* op = nullptr;
    for (const ValidationCase& c : cases) {
        if (!usable(c)) continue;
        if (prev == nullptr || c.gpu != prev->gpu || c.set != prev->set || c.source != prev->source || c.family != prev->family ||
            c.op != prev->op) {
            g.spec.emplace(c.gpu, c.spec);
            const int rank = family_rank(c.family);
            family = &g.by_family[{c.gpu, c.set, c.source, rank, c.family}];
            op = c.family != "e2e" ? &g.by_op[{c.gpu, c.set, c.source, rank, c.op}] : nullptr;
            prev = &c;
        }
        family->push_back(&c);
        if (op != nullptr) op->push_back(&c);
    }
    return g;
}

ordered_json verdict(const std::string& name, const std::string& threshold, double limit_pct,
                     const std::vector<std::tuple<GroupKey, double>>& values) {
    ordered_json v;
    v["name"] = name;
    v["threshold"] = threshold;
    v["limit_pct"] = limit_pct;
    ordered_json failing = ordered_json::array();
    for (const auto& [key, pct] : values) {
        if (std::fabs(pct) <= limit_pct) continue;
        ordered_json f = {{"gpu", key.gpu}, {"set", key.set}, {"source", key.source}};
        if (key.name != "e2e") f["family"] = key.name;
        f["value_pct"] = pct;
        failing.push_back(std::move(f));
    }
    v["status"] = values.empty() ? "no cases" : failing.empty() ? "pass" : "fail";
    v["groups"] = values.size();
    v["failing"] = std::move(failing);
    return v;
}

ordered_json verdicts_json(const Groups& g) {
    std::vector<std::tuple<GroupKey, double>> family_median, e2e_median, bias;
    for (const auto& [key, cs] : g.by_family) {
        const Stats s = stats_of(cs);
        const std::string& family = key.name;
        if (family == "e2e")
            e2e_median.emplace_back(key, 100 * s.median);
        else if (family != "other")
            family_median.emplace_back(key, 100 * s.median);
        if (family != "other") bias.emplace_back(key, 100 * s.bias);
    }
    ordered_json v = ordered_json::array();
    v.push_back(verdict("family_median", "median |error| <= 10% in every family on every GPU", 10, family_median));
    v.push_back(verdict("e2e_median", "end-to-end median |error| <= 10% on every GPU", 10, e2e_median));
    v.push_back(verdict("bias", "|bias| (median signed error) <= 5% in every family and end to end on every GPU", 5, bias));
    return v;
}

ordered_json sample_json(const Groups& g) {
    // The scatter plots' points: at most 100 cases per (GPU, set, family), evenly spaced in input
    // order; every end-to-end case.
    ordered_json a = ordered_json::array();
    for (const auto& [key, cs] : g.by_family)
        for (std::size_t i : evenly_spaced(cs.size(), key.name == "e2e" ? 0 : 100)) a.push_back(case_json(*cs[i]));
    return a;
}

ordered_json document(const MeasurementSet& set, const ValidateOptions& opt, const std::vector<double>& defaults, const ordered_json& folds,
                      const ordered_json& fit) {
    const Groups g = group_cases(set.cases);
    ordered_json doc;
    doc["schema"] = "roofline-validation/1";
    doc["tool"] = {{"name", "roofline"}, {"version", ROOFLINE_VERSION}};
    ordered_json fams = ordered_json::array();
    for (const std::string& f : opt.families) fams.push_back(f);
    ordered_json fitting = ordered_json::array();
    for (const std::string& f : opt.fitting_gpus) fitting.push_back(device_key(f));
    doc["settings"] = {{"leave_one_out", opt.leave_one_out ? "gpu" : "none"},
                       {"fit", opt.fit},
                       {"families", fams},
                       {"max_rows", opt.max_rows},
                       {"fit_sample", opt.fit_sample},
                       {"fit_sample_e2e", opt.fit_sample_e2e},
                       {"sweeps", opt.sweeps},
                       {"fit_start", start_name(opt.leave_one_out ? opt.fold_start() : opt.all_gpu_start())},
                       {"dtype", "f32"},
                       {"runtime", "eager"},
                       {"e2e_train_optimizer", std::string(optimizer_name(backward_only_optimizer<Optimizer>()))},
                       {"fitting_gpus", fitting}};
    if (!opt.hosts.empty()) {
        ordered_json hosts = ordered_json::array();
        for (const auto& [device, h] : opt.hosts)
            hosts.push_back({{"device", device.empty() ? "*" : device_key(device)}, {"name", h.name}, {"file", h.origin}});
        doc["settings"]["hosts"] = hosts;
    }
    ordered_json inputs = ordered_json::array();
    for (const auto& in : set.inputs) inputs.push_back({{"file", in.file}, {"kind", in.kind}, {"rows", in.rows}});
    doc["inputs"] = inputs;

    std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::string, std::size_t>>
        gpus;  // (gpu, set, source) -> spec, cases
    std::size_t predicted = 0, errors = 0;
    for (const ValidationCase& c : set.cases) {
        auto& e = gpus[{c.gpu, c.set, c.source}];
        e.first = c.spec;
        ++e.second;
        predicted += usable(c) ? 1 : 0;
        errors += c.error.empty() ? 0 : 1;
    }
    ordered_json ga = ordered_json::array();
    for (const auto& [key, v] : gpus) {
        const auto& [gpu, set_name, source] = key;
        ga.push_back({{"gpu", gpu}, {"spec", v.first}, {"set", set_name}, {"source", source}, {"cases", v.second}});
    }
    doc["gpus"] = ga;
    std::size_t skipped = 0;
    for (const auto& [op, n] : set.skipped) skipped += n;
    doc["summary"] = {{"cases", set.cases.size()}, {"predicted", predicted}, {"errors", errors}, {"skipped", skipped}};

    ordered_json terms = ordered_json::array();
    const auto fts = fitted_terms();
    for (std::size_t t = 0; t < fts.size(); ++t) {
        terms.push_back({{"name", std::string(fts[t].name)},
                         {"default", defaults[t]},
                         {"lo", fts[t].lo},
                         {"hi", fts[t].hi},
                         {"families", std::string(fts[t].families)},
                         {"evidence", std::string(fts[t].evidence)}});
    }
    doc["terms"] = terms;
    if (opt.leave_one_out) doc["folds"] = folds;
    if (opt.fit) doc["fit"] = fit;
    doc["verdicts"] = verdicts_json(g);

    ordered_json by_family = ordered_json::array(), by_op = ordered_json::array(), e2e = ordered_json::array();
    std::vector<const ValidationCase*> all_ops;
    for (const auto& [key, cs] : g.by_family) {
        ordered_json j = {{"gpu", key.gpu}, {"spec", g.spec.at(key.gpu)}, {"set", key.set}, {"source", key.source}};
        if (key.name != "e2e") j["family"] = key.name;
        put_stats(j, stats_of(cs));
        ordered_json worst = ordered_json::array();
        for (const ValidationCase* c : worst_of(cs, key.name == "e2e" ? cs.size() : opt.worst)) worst.push_back(case_json(*c));
        if (key.name == "e2e") {
            j["cases"] = worst;  // every end-to-end case, worst first
            e2e.push_back(std::move(j));
        } else {
            j["worst"] = worst;
            by_family.push_back(std::move(j));
            all_ops.insert(all_ops.end(), cs.begin(), cs.end());
        }
    }
    for (const auto& [key, cs] : g.by_op) {
        ordered_json j = {{"gpu", key.gpu}, {"set", key.set}, {"source", key.source}, {"op", key.name}};
        put_stats(j, stats_of(cs));
        by_op.push_back(std::move(j));
    }
    doc["by_family"] = by_family;
    doc["by_op"] = by_op;
    doc["end_to_end"] = e2e;
    std::sort(all_ops.begin(), all_ops.end());  // input order (cases are one vector)
    ordered_json worst = ordered_json::array();
    for (const ValidationCase* c : worst_of(all_ops, 10)) worst.push_back(case_json(*c));
    doc["worst"] = worst;
    ordered_json sk = ordered_json::array();
    for (const auto& [op, n] : set.skipped) sk.push_back({{"op", op}, {"rows", n}, {"reason", set.skip_reason.at(op)}});
    doc["skipped"] = sk;
    ordered_json errs = ordered_json::array();
    for (const ValidationCase& c : set.cases) {
        if (c.error.empty()) continue;
        errs.push_back({{"file", c.file}, {"row", c.row}, {"gpu", c.gpu}, {"op", c.op}, {"shape", shape_text(c)}, {"message", c.error}});
    }
    doc["errors"] = errs;
    doc["sample"] = sample_json(g);
    return doc;
}

// The default pass over every case: op cases that cannot be built are bad input (the file's row
// names them); end-to-end models that do not load are per-row errors, reported and counted.
void predict_all(MeasurementSet& set, const Predictor& p, const std::vector<double>& values) {
    std::vector<std::size_t> idx(set.cases.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::vector<std::string> errors;
    std::vector<std::string> kernels;
    const std::vector<double> pred = p.run(idx, values, &errors, false, &kernels);
    for (std::size_t i = 0; i < idx.size(); ++i) {
        ValidationCase& c = set.cases[i];
        c.predicted_s = pred[i];
        c.model_kernel = std::move(kernels[i]);
        if (errors[i].empty() && pred[i] <= 0) errors[i] = "the model predicts no time";
        if (errors[i].empty()) continue;
        if (c.op != "e2e") throw InputError(fmt::format("{}: row {} (line {}): {}: {}", c.file, c.row, c.line, c.op, errors[i]));
        c.error = errors[i];
    }
}

}  // namespace

Graph measured_inference_graph(const nlohmann::json& model, const std::string& file) { return measured_phase_graph(model, file); }

std::string validation_case_shape(const ValidationCase& c) { return shape_text(c); }

MeasurementSet load_measurements(const std::vector<std::string>& paths, const ValidateOptions& opt) {
    check_families(opt);
    if (paths.empty()) throw InputError("validate: no measurement files given");
    std::vector<std::string> files;
    for (const std::string& p : paths) {
        std::error_code ec;
        if (!fs::is_directory(p, ec)) {
            files.push_back(p);
            continue;
        }
        std::vector<std::string> csvs;
        for (const auto& e : fs::directory_iterator(p, ec))
            if (e.is_regular_file() && e.path().extension() == ".csv") csvs.push_back(e.path().string());
        std::sort(csvs.begin(), csvs.end());
        if (csvs.empty())
            throw InputError(p + ": a directory without CSV files (expected the public layout: linear.csv, ..., end_to_end.csv)");
        files.insert(files.end(), csvs.begin(), csvs.end());
    }
    // Files are read in parallel, each into its own set, and joined in order; the first bad file
    // (in that order) is the error.
    std::vector<MeasurementSet> parts(files.size());
    std::vector<std::exception_ptr> failed(files.size());
    std::atomic<std::size_t> next{0};
    on_threads(std::min<unsigned>(thread_count(opt), static_cast<unsigned>(files.size())), [&] {
        for (std::size_t i = next++; i < files.size(); i = next++) {
            try {
                Loader(opt, parts[i]).file(files[i]);
            } catch (...) {
                failed[i] = std::current_exception();
            }
        }
    });
    for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
    MeasurementSet set;
    std::size_t n = 0;
    for (const MeasurementSet& part : parts) n += part.cases.size();
    set.cases.reserve(n);
    for (MeasurementSet& part : parts) {
        std::move(part.cases.begin(), part.cases.end(), std::back_inserter(set.cases));
        set.inputs.insert(set.inputs.end(), part.inputs.begin(), part.inputs.end());
        for (const auto& [op, rows] : part.skipped) set.skipped[op] += rows;
        set.skip_reason.insert(part.skip_reason.begin(), part.skip_reason.end());
    }
    return set;
}

void predict_measurements(MeasurementSet& set, const ValidateOptions& opt) {
    const Predictor p(set.cases, thread_count(opt), opt.hosts);
    predict_all(set, p, default_values(opt));
}

ordered_json run_validation(MeasurementSet set, const ValidateOptions& opt, std::vector<ValidationCase>* predicted) {
    std::vector<ValidationCase>& cases = set.cases;
    std::set<std::string> fitting;
    for (const std::string& g : opt.fitting_gpus) fitting.insert(device_key(g));
    for (ValidationCase& c : cases) {
        const bool pool = !c.fixed && fitting.count(c.gpu) != 0;
        c.set = !pool ? "held-out" : opt.leave_one_out ? "validation" : "fit";
    }
    const Predictor p(cases, thread_count(opt), opt.hosts);
    const std::vector<double> defaults = default_values(opt);
    predict_all(set, p, defaults);
    std::vector<std::size_t> pool;
    std::set<std::string> pool_gpus;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].set == "held-out" || !cases[i].error.empty()) continue;
        pool.push_back(i);
        pool_gpus.insert(cases[i].gpu);
    }
    ordered_json folds = ordered_json::array();
    if (opt.leave_one_out) {
        if (pool_gpus.size() < 2) {
            std::string have;
            for (const std::string& g : pool_gpus) have += (have.empty() ? "" : ", ") + g;
            throw InputError("--leave-one-out gpu needs cases of at least two fitting GPUs (have: " + (have.empty() ? "none" : have) + ")");
        }
        const std::vector<double> fold_start = start_values(opt, opt.fold_start());
        for (const std::string& gpu : pool_gpus) {
            std::vector<std::size_t> train, test;
            for (std::size_t i : pool) (cases[i].gpu == gpu ? test : train).push_back(i);
            const FitResult fit = fit_terms(p, cases, train, fold_start, defaults, opt);
            std::vector<std::string> kernels;
            const std::vector<double> pred = p.run(test, fit.values, nullptr, true, &kernels);
            for (std::size_t k = 0; k < test.size(); ++k) {
                cases[test[k]].predicted_s = pred[k];
                cases[test[k]].model_kernel = std::move(kernels[k]);
            }
            folds.push_back(
                {{"left_out", gpu}, {"training_cases", fit.cases}, {"values", values_json(fit.values)}, {"objective", fit.after}});
        }
    }
    ordered_json fit_doc;
    if (opt.fit) {
        const FitResult fit = fit_terms(p, cases, pool, start_values(opt, opt.all_gpu_start()), defaults, opt);
        ordered_json gl = ordered_json::array();
        for (const std::string& g : pool_gpus) gl.push_back(g);
        fit_doc = {{"gpus", gl},
                   {"start", start_name(opt.all_gpu_start())},
                   {"cases", fit.cases},
                   {"values", values_json(fit.values)},
                   {"objective_default", fit.before},
                   {"objective_fitted", fit.after}};
    }
    ordered_json doc = document(set, opt, defaults, folds, fit_doc);
    if (predicted != nullptr) *predicted = std::move(set.cases);
    return doc;
}

std::string validation_cases_csv(const std::vector<ValidationCase>& cases) {
    std::string out = "file,row,gpu,spec,set,source,op,family,shape,measured_s,predicted_s,error_pct,model_kernel\n";
    for (const ValidationCase& c : cases) {
        const bool ok = c.predicted_s > 0 && c.error.empty();
        out += fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{},{},{}\n", csv_quote(c.file), c.row, csv_quote(c.gpu), csv_quote(c.spec),
                           c.set, c.source, csv_quote(c.op), c.family, csv_quote(shape_text(c)), c.measured_s,
                           ok ? fmt::format("{:.9g}", c.predicted_s) : "",
                           ok ? fmt::format("{:.6g}", 100 * (c.predicted_s / c.measured_s - 1)) : "", csv_quote(c.model_kernel));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Terminal text.

namespace {

std::string pct(double v) { return fmt::format("{:.1f}%", v); }
std::string spct(double v) { return fmt::format("{:+.1f}%", v); }

std::string clip(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

// The GPU column: a `measure` JSON's rows are marked, beside the same GPU's PyTorch rows.
std::string gpu_label(const ordered_json& j) {
    return j.value("source", "") == "measure" ? clip(j["gpu"].get<std::string>(), 20) + " [measure]"
                                              : clip(j["gpu"].get<std::string>(), 30);
}

std::string stats_row(const ordered_json& j) {
    return fmt::format("{:>7} {:>8} {:>8} {:>8}", j["n"].get<std::size_t>(), pct(j["median_abs_error_pct"].get<double>()),
                       pct(j["p90_abs_error_pct"].get<double>()), spct(j["bias_pct"].get<double>()));
}

std::string case_line(const ordered_json& c) {
    return fmt::format("  {:<24} {:<11} {:<8} {:<34} {:>10} {:>10} {:>8}  {}:{}\n", clip(c["gpu"].get<std::string>(), 24),
                       c["set"].get<std::string>(), clip(c["op"].get<std::string>(), 8), clip(c["shape"].get<std::string>(), 34),
                       human_time(c["predicted_s"].get<double>()), human_time(c["measured_s"].get<double>()),
                       spct(c["error_pct"].get<double>()), c["file"].get<std::string>(), c["row"].get<std::int64_t>());
}

std::string fits_text(const ordered_json& doc) {
    std::string o;
    if (doc.contains("folds")) {
        o += "\nLeave-one-GPU-out: the fitted terms refitted without each GPU (its rows above are predicted with these)\n";
        for (const auto& f : doc["folds"]) {
            std::string vals;
            for (const auto& [name, v] : f["values"].items()) vals += fmt::format("  {} {:.4g}", name, v.get<double>());
            o += fmt::format("  without {:<24}{}   (objective {:.4f} on {} cases)\n", clip(f["left_out"].get<std::string>(), 24), vals,
                             f["objective"].get<double>(), f["training_cases"].get<std::size_t>());
        }
    }
    if (doc.contains("fit")) {
        const ordered_json& f = doc["fit"];
        o += fmt::format("\nFit on {} GPU(s), {} cases (--fit; to set the compiled-in defaults from):\n", f["gpus"].size(),
                         f["cases"].get<std::size_t>());
        for (const auto& t : doc["terms"]) {
            const std::string name = t["name"].get<std::string>();
            o += fmt::format("  {:<28} {:.4g} -> {:.4g}   (range {:.3g}..{:.3g})\n", name, t["default"].get<double>(),
                             f["values"][name].get<double>(), t["lo"].get<double>(), t["hi"].get<double>());
        }
        o += fmt::format("  objective (mean over GPU x family of the median |log(pred/meas)|): {:.4f} -> {:.4f}\n",
                         f["objective_default"].get<double>(), f["objective_fitted"].get<double>());
    }
    return o;
}

}  // namespace

std::string render_validation(const ordered_json& doc) {
    const ordered_json& s = doc["summary"];
    std::string o = fmt::format("roofline validate: {} cases from {} file(s), {} predicted, {} errors, {} rows skipped\n",
                                s["cases"].get<std::size_t>(), doc["inputs"].size(), s["predicted"].get<std::size_t>(),
                                s["errors"].get<std::size_t>(), s["skipped"].get<std::size_t>());
    std::set<std::string> sets;
    for (const auto& g : doc["gpus"]) sets.insert(g["set"].get<std::string>());
    if (sets.count("fit")) o += "set fit: predicted with the compiled-in fitted terms, which were fitted on these GPUs (in-sample)\n";
    if (sets.count("validation"))
        o += "set validation: each fitting GPU predicted with the fitted terms refitted without it (leave one GPU out)\n";
    if (sets.count("held-out")) o += "set held-out: GPUs and runs never used for fitting, predicted with the compiled-in fitted terms\n";
    o += "error = predicted / measured - 1; median and p90 of |error|, bias = median signed error\n\n";
    o += fmt::format("{:<30} {:<16} {:<11} {:<12} {:>7} {:>8} {:>8} {:>8}\n", "GPU", "spec", "set", "family", "n", "median", "p90", "bias");
    for (const auto& j : doc["by_family"]) {
        o += fmt::format("{:<30} {:<16} {:<11} {:<12} {}\n", gpu_label(j), clip(j["spec"].get<std::string>(), 16),
                         j["set"].get<std::string>(), j["family"].get<std::string>(), stats_row(j));
    }
    o += "\nEnd to end (step time)\n";
    o += fmt::format("{:<30} {:<16} {:<11} {:>7} {:>8} {:>8} {:>8}\n", "GPU", "spec", "set", "n", "median", "p90", "bias");
    for (const auto& j : doc["end_to_end"]) {
        o += fmt::format("{:<30} {:<16} {:<11} {}\n", gpu_label(j), clip(j["spec"].get<std::string>(), 16), j["set"].get<std::string>(),
                         stats_row(j));
    }
    if (doc["end_to_end"].empty()) o += "  (no end-to-end cases)\n";
    o += fits_text(doc);
    o += "\nVerdicts (the thresholds of issue #15)\n";
    for (const auto& v : doc["verdicts"]) {
        std::string detail;
        const auto& failing = v["failing"];
        if (!failing.empty()) {
            const auto worst = std::max_element(failing.begin(), failing.end(), [](const auto& a, const auto& b) {
                return std::fabs(a["value_pct"].template get<double>()) < std::fabs(b["value_pct"].template get<double>());
            });
            detail = fmt::format(": {} of {} groups miss (worst: {}{} {} {})", failing.size(), v["groups"].get<std::size_t>(),
                                 (*worst)["gpu"].get<std::string>(), worst->value("source", "") == "measure" ? " [measure]" : "",
                                 worst->value("family", "end to end"), pct((*worst)["value_pct"].get<double>()));
        } else {
            detail = fmt::format(": {} groups", v["groups"].get<std::size_t>());
        }
        std::string status = v["status"].get<std::string>();
        std::transform(status.begin(), status.end(), status.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
        o += fmt::format("  {:<8} {}{}\n", status, v["threshold"].get<std::string>(), detail);
    }
    if (!doc["worst"].empty()) {
        o += "\nWorst cases (by |log(predicted / measured)|)\n";
        o += fmt::format("  {:<24} {:<11} {:<8} {:<34} {:>10} {:>10} {:>8}  {}\n", "GPU", "set", "op", "shape", "predicted", "measured",
                         "error", "file:row");
        for (const auto& c : doc["worst"]) o += case_line(c);
    }
    for (const auto& k : doc["skipped"])
        o += fmt::format("\nskipped: {} {} rows ({})\n", k["rows"].get<std::size_t>(), k["op"].get<std::string>(),
                         k["reason"].get<std::string>());
    if (!doc["errors"].empty()) {
        o += fmt::format("\n{} case(s) could not be predicted:\n", doc["errors"].size());
        for (const auto& e : doc["errors"]) {
            o += fmt::format("  {}:{} {} ({}): {}\n", e["file"].get<std::string>(), e["row"].get<std::int64_t>(),
                             e["shape"].get<std::string>(), e["gpu"].get<std::string>(), e["message"].get<std::string>());
        }
    }
    return o;
}

}  // namespace roofline
