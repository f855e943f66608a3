// `fulgur inspect FILE.gguf [--json] [--max-elements N]`: prints a GGUF file's header, metadata
// and tensor table. The reader validates the whole file first, so a malformed file ends in its
// error message (exit status 1 via main) before anything is printed.
//
// JSON shape: {"file", "version", "alignment", "data_offset", "metadata": {key: value},
// "tensors": [{"name", "type", "shape", "offset", "bytes"}], "tensor_count", "total_bytes"}.
// Scalars map to JSON numbers/booleans/strings (non-finite floats become null, invalid UTF-8 is
// replaced by U+FFFD). An array with at most N elements (default 16, 0 = no limit) is a JSON
// array; a longer one is abbreviated to {"type": "ARRAY[INT32]", "length": n, "head": [first N]}.
// "offset" is relative to the data section, which starts at "data_offset" in the file.
// Files with {arch}.full_attention_interval or {arch}.nextn_predict_layers (the Gated-DeltaNet
// hybrids, MTP blocks) also get their block layout (gguf/block_layout.h): text "layout: ...",
// JSON "layout": {"block_count", "trunk", "gated_delta_net": [...], "attention": [...],
// "mtp": [...]}, or, for a file that breaks the contract, "layout: invalid: <why>" /
// {"error": "<why>"} (the rest is still printed).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"

namespace fulgur::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps metadata in file order

struct InspectOptions {
  std::string path;
  bool json = false;
  size_t max_elements = 16;
};

// Keys and tensor names come from the file: replace control bytes so they cannot drive the
// terminal.
std::string printable(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

std::string shape_string(const GgufTensorInfo& t) {
  std::string out = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) out += cat(d > 0 ? ", " : "", t.ne[d]);
  return out + "]";
}

Json scalar_json(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64:
      return v.get_int<uint64_t>();
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64:
      return v.get_int<int64_t>();
    case GgufType::kFloat32:
    case GgufType::kFloat64: {
      const double d = v.get_float();
      return std::isfinite(d) ? Json(d) : Json(nullptr);
    }
    case GgufType::kBool:
      return v.get_bool();
    case GgufType::kString:
      return v.get_string();
    case GgufType::kArray:
      break;
  }
  return nullptr;
}

Json value_json(const GgufValue& v, size_t max_elements) {
  if (!v.is_array()) return scalar_json(v);
  const bool abbreviate = max_elements != 0 && v.size() > max_elements;
  const size_t n = abbreviate ? max_elements : v.size();
  Json elements = Json::array();
  for (size_t i = 0; i < n; ++i) elements.push_back(scalar_json(v.element(i)));
  if (!abbreviate) return elements;
  return {{"type", v.type_name()}, {"length", v.size()}, {"head", std::move(elements)}};
}

// Whether the file declares a hybrid or MTP layout.
bool has_layout(const GgufReader& r) {
  const GgufValue* arch = r.find("general.architecture");
  if (arch == nullptr || arch->type() != GgufType::kString) return false;
  const std::string a = arch->get_string();
  return r.has(a + ".full_attention_interval") || r.has(a + ".nextn_predict_layers");
}

Json layout_json(const GgufReader& r) {
  try {
    const BlockLayout l = read_block_layout(r);
    Json out = {{"block_count", l.n_block}, {"trunk", l.n_trunk()}};
    for (const auto& [name, kind] : {std::pair{"gated_delta_net", BlockKind::kGatedDeltaNet},
                                     std::pair{"attention", BlockKind::kAttention},
                                     std::pair{"mtp", BlockKind::kMtp}}) {
      Json blocks = Json::array();
      for (size_t i = 0; i < l.kinds.size(); ++i) {
        if (l.kinds[i] == kind) blocks.push_back(i);
      }
      out[name] = std::move(blocks);
    }
    return out;
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

void print_json(const GgufReader& r, const InspectOptions& opt) {
  Json out;
  out["file"] = opt.path;
  out["version"] = r.version();
  out["alignment"] = r.alignment();
  out["data_offset"] = r.data_offset();
  Json metadata = Json::object();
  for (const GgufKv& kv : r.metadata()) metadata[kv.key] = value_json(kv.value, opt.max_elements);
  out["metadata"] = std::move(metadata);
  Json tensors = Json::array();
  uint64_t total = 0;
  for (const GgufTensorInfo& t : r.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(dtype_name(t.type))},
                       {"shape", t.shape()},
                       {"offset", t.offset},
                       {"bytes", t.nbytes}});
    total += t.nbytes;
  }
  out["tensors"] = std::move(tensors);
  out["tensor_count"] = r.tensors().size();
  out["total_bytes"] = total;
  if (has_layout(r)) out["layout"] = layout_json(r);
  const std::string text = out.dump(2, ' ', false, Json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

void print_text(const GgufReader& r, const InspectOptions& opt) {
  std::printf("file:        %s\n", opt.path.c_str());
  std::printf("version:     %u\n", r.version());
  std::printf("alignment:   %u\n", r.alignment());
  std::printf("data offset: %llu\n", static_cast<unsigned long long>(r.data_offset()));
  std::printf("metadata:    %zu keys\n", r.metadata().size());
  size_t key_width = 0;
  for (const GgufKv& kv : r.metadata()) key_width = std::max(key_width, kv.key.size());
  key_width = std::min<size_t>(key_width, 48);
  for (const GgufKv& kv : r.metadata()) {
    std::string type = kv.value.type_name();
    if (kv.value.is_array()) type += cat("(", kv.value.size(), ")");
    const size_t shown = opt.max_elements == 0 ? kv.value.size() : opt.max_elements;
    std::printf("  %-*s  %-22s %s\n", static_cast<int>(key_width), printable(kv.key).c_str(),
                type.c_str(), kv.value.to_string(shown).c_str());
  }
  std::printf("tensors:     %zu\n", r.tensors().size());
  size_t name_width = 4;
  for (const GgufTensorInfo& t : r.tensors()) name_width = std::max(name_width, t.name.size());
  std::printf("  %-*s  %-8s %-28s %14s %14s\n", static_cast<int>(name_width), "name", "type",
              "shape", "offset", "bytes");
  uint64_t total_bytes = 0;
  uint64_t total_elements = 0;
  for (const GgufTensorInfo& t : r.tensors()) {
    std::printf("  %-*s  %-8s %-28s %14llu %14llu\n", static_cast<int>(name_width),
                printable(t.name).c_str(), std::string(dtype_name(t.type)).c_str(),
                shape_string(t).c_str(), static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.nbytes));
    total_bytes += t.nbytes;
    total_elements += static_cast<uint64_t>(t.n_elements());
  }
  std::printf("total:       %zu tensors, %llu elements, %llu bytes (%.2f MiB)\n",
              r.tensors().size(), static_cast<unsigned long long>(total_elements),
              static_cast<unsigned long long>(total_bytes),
              static_cast<double>(total_bytes) / (1024.0 * 1024.0));
  if (const GgufValue* size = r.find("fulgur.standin.size")) {  // written by `fulgur standin`
    const GgufValue* source = r.find("fulgur.standin.source");
    std::printf("stand-in:    of %s at the bytes per token of %s: the same function, every FFN widened by units "
                "whose ffn_down columns are zero\n",
                source ? printable(source->to_string()).c_str() : "?", printable(size->to_string()).c_str());
  }
  if (has_layout(r)) {
    try {
      std::printf("layout:      %s\n", describe(read_block_layout(r)).c_str());
    } catch (const Error& e) {
      std::printf("layout:      invalid: %s\n", printable(e.what()).c_str());
    }
  }
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "print a GGUF file's metadata and tensor table");
  cmd->add_option("file", opt->path, "GGUF file")->required();
  cmd->add_flag("--json", opt->json, "print one JSON object");
  cmd->add_option("--max-elements", opt->max_elements,
                  "array elements shown before abbreviating (0 = all)")
      ->capture_default_str();
  cmd->callback([opt, &exit_code] {
    // Errors propagate to main, which prints "fulgur: error: <message>" and exits with 1.
    const GgufReader reader(opt->path);
    if (opt->json) {
      print_json(reader, *opt);
    } else {
      print_text(reader, *opt);
    }
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
