#include "tokenizer/hf_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "tokenizer/hf_sentencepiece.h"
#include "tokenizer/pre_tokenizer.h"

namespace fulgur {
namespace {

using json = nlohmann::json;

// What ByteLevel(use_regex = true) splits with (GPT-2's pattern).
constexpr std::string_view kByteLevelRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  FULGUR_CHECK(!in.bad(), "cannot read '", path, "'");
  return text.str();
}

json parse_json(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(source, ": invalid JSON: ", e.what());
  }
}

// Field access with errors that name the file and the JSON path.
const json& need(const json& obj, const char* key, std::string_view source, std::string_view path) {
  FULGUR_CHECK(obj.is_object(), source, ": ", path, " is not an object");
  const auto it = obj.find(key);
  FULGUR_CHECK(it != obj.end(), source, ": ", path, ".", key, " is missing");
  return *it;
}

bool get_bool(const json& obj, const char* key, bool fallback, std::string_view source,
              std::string_view path) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  FULGUR_CHECK(it->is_boolean(), source, ": ", path, ".", key, " is ", it->dump(),
               "; expected true or false");
  return it->get<bool>();
}

std::string get_string(const json& obj, const char* key, std::string_view source,
                       std::string_view path) {
  const json& v = need(obj, key, source, path);
  FULGUR_CHECK(v.is_string(), source, ": ", path, ".", key, " is ", v.dump(),
               "; expected a string");
  return v.get<std::string>();
}

bool looks_like_control(std::string_view text) {
  return text.size() >= 4 && text.substr(0, 2) == "<|" && text.substr(text.size() - 2) == "|>";
}

struct PreTokenizerShape {
  std::vector<std::string> regexes;
  bool byte_level = false;
};

void collect_pre_tokenizer(const json& node, std::string_view source, const std::string& path,
                           PreTokenizerShape& shape) {
  const std::string type = get_string(node, "type", source, path);
  FULGUR_CHECK(!shape.byte_level, source, ": ", path, " (", type,
               ") follows ByteLevel; byte-level mapping must be the last pre-tokenizer step");
  if (type == "Sequence") {
    const json& steps = need(node, "pretokenizers", source, path);
    FULGUR_CHECK(steps.is_array(), source, ": ", path, ".pretokenizers is not an array");
    for (size_t i = 0; i < steps.size(); ++i) {
      collect_pre_tokenizer(steps[i], source, cat(path, ".pretokenizers[", i, "]"), shape);
    }
  } else if (type == "Split") {
    const json& pattern = need(node, "pattern", source, path);
    FULGUR_CHECK(pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string(),
                 source, ": ", path, ".pattern is ", pattern.dump(),
                 "; only {\"Regex\": ...} patterns are supported");
    const std::string behavior = get_string(node, "behavior", source, path);
    FULGUR_CHECK(behavior == "Isolated", source, ": ", path, ".behavior is '", behavior,
                 "'; only 'Isolated' is supported");
    FULGUR_CHECK(!get_bool(node, "invert", false, source, path), source, ": ", path,
                 ".invert is true; not supported");
    shape.regexes.push_back(pattern["Regex"].get<std::string>());
  } else if (type == "ByteLevel") {
    FULGUR_CHECK(!get_bool(node, "add_prefix_space", false, source, path), source, ": ", path,
                 ".add_prefix_space is true; not supported");
    if (get_bool(node, "use_regex", true, source, path)) {
      shape.regexes.emplace_back(kByteLevelRegex);
    }
    shape.byte_level = true;
  } else {
    fail(source, ": ", path, ".type is '", type,
         "'; supported pre-tokenizers are Sequence, Split (Regex, Isolated) and ByteLevel");
  }
}

std::string recognise_pre_tokenizer(const json& root, std::string_view source) {
  const json& node = need(root, "pre_tokenizer", source, "$");
  FULGUR_CHECK(!node.is_null(), source,
               ": pre_tokenizer is null; expected a byte-level pre-tokenizer");
  PreTokenizerShape shape;
  collect_pre_tokenizer(node, source, "pre_tokenizer", shape);
  FULGUR_CHECK(shape.byte_level, source,
               ": pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
  const std::string name = pre_tokenizer_name_for(shape.regexes);
  if (name.empty()) {
    std::string listed;
    for (const std::string& r : shape.regexes) listed += cat(" '", r, "'");
    fail(source, ": unrecognised pre-tokenizer regex(es):", listed,
         " (known: qwen2, qwen35, llama-bpe, gpt2)");
  }
  return name;
}

Normalizer parse_normalizer(const json& root, std::string_view source) {
  const auto it = root.find("normalizer");
  if (it == root.end() || it->is_null()) return Normalizer::kNone;
  const std::string type = get_string(*it, "type", source, "normalizer");
  if (type == "NFC") return Normalizer::kNfc;
  if (type == "Sequence") {
    const json& steps = need(*it, "normalizers", source, "normalizer");
    FULGUR_CHECK(steps.is_array(), source, ": normalizer.normalizers is not an array");
    if (steps.empty()) return Normalizer::kNone;
    if (steps.size() == 1 && steps[0].is_object() && steps[0].value("type", "") == "NFC") {
      return Normalizer::kNfc;
    }
  }
  fail(source, ": normalizer ", it->dump(), " is not supported (expected null or NFC)");
}

void parse_merges(const json& model, std::string_view source, Vocab& vocab) {
  const json& merges = need(model, "merges", source, "model");
  FULGUR_CHECK(merges.is_array(), source, ": model.merges is not an array");
  vocab.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      vocab.merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      const std::string left = m[0].get<std::string>(), right = m[1].get<std::string>();
      // The GGUF form "left right" splits at the first space after index 0: a space inside
      // the right side is fine, inside the left side it would be ambiguous.
      FULGUR_CHECK(!left.empty() && !right.empty() && left.find(' ', 1) == std::string::npos,
                   source, ": model.merges[", i, "] = ", m.dump(),
                   " cannot be written as 'left right'");
      vocab.merges.push_back(left + " " + right);
    } else {
      fail(source, ": model.merges[", i, "] = ", m.dump(),
           "; expected \"left right\" or [\"left\", \"right\"]");
    }
  }
}

// TemplateProcessing's "single" template tells whether BOS / EOS are added around a text.
void parse_post_processor(const json& root, std::string_view source, Vocab& vocab,
                          const std::vector<bool>& present) {
  const auto it = root.find("post_processor");
  if (it == root.end() || it->is_null() || !it->is_object()) return;
  std::vector<const json*> nodes{&*it};
  if (it->value("type", "") == "Sequence" && it->contains("processors") &&
      (*it)["processors"].is_array()) {
    nodes.clear();
    for (const json& p : (*it)["processors"]) nodes.push_back(&p);
  }
  for (const json* node : nodes) {
    if (!node->is_object() || node->value("type", "") != "TemplateProcessing") continue;
    const auto single = node->find("single");
    if (single == node->end() || !single->is_array() || single->empty()) continue;
    auto special_id = [&](const json& piece) -> int32_t {
      if (!piece.is_object() || !piece.contains("SpecialToken")) return -1;
      const std::string name = piece["SpecialToken"].value("id", "");
      const auto& sp = node->value("special_tokens", json::object());
      if (!sp.contains(name) || !sp[name].contains("ids") || !sp[name]["ids"].is_array() ||
          sp[name]["ids"].size() != 1 || !sp[name]["ids"][0].is_number_integer()) {
        fail(source, ": post_processor special token '", name, "' has no single id");
      }
      const auto id = sp[name]["ids"][0].get<int64_t>();
      FULGUR_CHECK(id >= 0 && id < static_cast<int64_t>(present.size()) && present[id], source,
                   ": post_processor special token '", name, "' has unknown id ", id);
      return static_cast<int32_t>(id);
    };
    const int32_t first = special_id(single->front());
    const int32_t last = single->size() > 1 ? special_id(single->back()) : -1;
    if (first >= 0) vocab.add_bos = true, vocab.bos_id = first;
    if (last >= 0) vocab.add_eos = true, vocab.eos_id = last;
  }
}

std::optional<std::string> token_string(const json& root, const char* key,
                                        std::string_view source) {
  const auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  fail(source, ": ", key, " is ", it->dump(), "; expected a string or an AddedToken object");
}

}  // namespace

static Vocab vocab_from_hf_json_impl(std::string_view json_text, std::string_view source,
                                     SpmGgufModel spm_as) {
  const json root = parse_json(json_text, source);
  FULGUR_CHECK(root.is_object(), source, ": top level is not an object");
  Vocab vocab;
  vocab.model = "gpt2";
  const json& model = need(root, "model", source, "$");
  const std::string type = model.is_object() ? model.value("type", "BPE") : "";
  FULGUR_CHECK(type == "BPE", source, ": model.type is '", type,
               "'; only BPE models are supported");
  const bool sentencepiece = get_bool(model, "byte_fallback", false, source, "model");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model.find(key);
    FULGUR_CHECK(
        it == model.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()),
        source, ": model.", key, " is ", it->dump(), "; only empty is supported");
  }
  const auto dropout = model.find("dropout");
  FULGUR_CHECK(dropout == model.end() || dropout->is_null() ||
                   (dropout->is_number() && dropout->get<double>() == 0.0),
               source, ": model.dropout is ", dropout->dump(), "; inference needs null");
  vocab.ignore_merges = get_bool(model, "ignore_merges", false, source, "model");
  FULGUR_CHECK(!(sentencepiece && vocab.ignore_merges), source,
               ": model.ignore_merges with byte_fallback is not supported");
  bool space_prefix = false;
  if (sentencepiece) {
    space_prefix = sentencepiece_space_prefix(root, source);
  } else {
    vocab.normalizer = parse_normalizer(root, source);
    vocab.pre = recognise_pre_tokenizer(root, source);
  }

  // Token ids from model.vocab and added_tokens; any id in neither becomes an UNUSED pad.
  const json& entries = need(model, "vocab", source, "model");
  FULGUR_CHECK(entries.is_object(), source, ": model.vocab is not an object");
  std::vector<bool> present;
  auto place = [&](int64_t id, const std::string& text, TokenType t, const std::string& where) {
    FULGUR_CHECK(id >= 0 && id < (int64_t{1} << 31), source, ": ", where, " has id ", id,
                 "; expected 0 .. 2^31-1");
    if (static_cast<size_t>(id) >= vocab.tokens.size()) {
      vocab.tokens.resize(id + 1);
      vocab.token_types.resize(id + 1, TokenType::kUnused);
      present.resize(id + 1, false);
    }
    if (present[id]) {  // an added token may restate a vocab entry, but not contradict it
      FULGUR_CHECK(vocab.tokens[id] == text, source, ": ", where, " gives id ", id, " to '", text,
                   "' but it already belongs to '", vocab.tokens[id], "'");
    }
    vocab.tokens[id] = text;
    vocab.token_types[id] = t;
    present[id] = true;
  };
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    FULGUR_CHECK(it.value().is_number_integer(), source, ": model.vocab[\"", it.key(), "\"] is ",
                 it.value().dump(), "; expected an integer id");
    place(it.value().get<int64_t>(), it.key(), TokenType::kNormal,
          cat("model.vocab[\"", it.key(), "\"]"));
  }
  const auto added = root.find("added_tokens");
  if (added != root.end() && !added->is_null()) {
    FULGUR_CHECK(added->is_array(), source, ": added_tokens is not an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const std::string where = cat("added_tokens[", i, "]");
      const json& id = need(a, "id", source, where);
      FULGUR_CHECK(id.is_number_integer(), source, ": ", where, ".id is ", id.dump(),
                   "; expected an integer");
      const std::string content = get_string(a, "content", source, where);
      FULGUR_CHECK(!content.empty(), source, ": ", where, ".content is empty");
      const bool special = get_bool(a, "special", false, source, where);
      place(id.get<int64_t>(), content,
            special || looks_like_control(content) ? TokenType::kControl : TokenType::kUserDefined,
            where);
    }
  }
  FULGUR_CHECK(!vocab.tokens.empty(), source, ": model.vocab is empty");
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (!present[i]) vocab.tokens[i] = cat("[PAD", i, "]");
  }
  parse_merges(model, source, vocab);
  parse_post_processor(root, source, vocab, present);
  if (sentencepiece) finish_sentencepiece_vocab(vocab, space_prefix, spm_as);
  return vocab;
}

// nlohmann throws its own exceptions on a wrong JSON type deep inside an accessor; every one of
// them becomes a fulgur::Error that names the file.
Vocab vocab_from_hf_json(std::string_view json_text, std::string_view source,
                         SpmGgufModel spm_as) {
  try {
    return vocab_from_hf_json_impl(json_text, source, spm_as);
  } catch (const json::exception& e) {
    fail(source, ": unexpected structure: ", e.what());
  }
}

Vocab load_hf_tokenizer(const std::string& path, SpmGgufModel spm_as) {
  return vocab_from_hf_json(read_file(path), path, spm_as);
}

static HfTokenizerConfig hf_config_from_json_impl(std::string_view json_text,
                                                  std::string_view source) {
  const json root = parse_json(json_text, source);
  FULGUR_CHECK(root.is_object(), source, ": top level is not an object");
  HfTokenizerConfig config;
  config.bos_token = token_string(root, "bos_token", source);
  config.eos_token = token_string(root, "eos_token", source);
  config.pad_token = token_string(root, "pad_token", source);
  config.unk_token = token_string(root, "unk_token", source);
  for (auto [key, field] : {std::pair{"add_bos_token", &config.add_bos_token},
                            std::pair{"add_eos_token", &config.add_eos_token},
                            std::pair{"add_prefix_space", &config.add_prefix_space}}) {
    const auto it = root.find(key);
    if (it == root.end() || it->is_null()) continue;
    FULGUR_CHECK(it->is_boolean(), source, ": ", key, " is ", it->dump(), "; expected a bool");
    *field = it->get<bool>();
  }
  const auto tmpl = root.find("chat_template");
  if (tmpl != root.end() && !tmpl->is_null()) {
    if (tmpl->is_string()) {
      config.chat_template = tmpl->get<std::string>();
    } else if (tmpl->is_array()) {  // [{"name": ..., "template": ...}, ...]
      for (size_t i = 0; i < tmpl->size(); ++i) {
        const std::string where = cat("chat_template[", i, "]");
        const std::string name = get_string((*tmpl)[i], "name", source, where);
        const std::string text = get_string((*tmpl)[i], "template", source, where);
        if (name == "default") {
          config.chat_template = text;
        } else {
          config.named_chat_templates[name] = text;
        }
      }
    } else {
      fail(source, ": chat_template is ", tmpl->type_name(), "; expected a string or a list");
    }
  }
  const auto cls = root.find("tokenizer_class");
  if (cls != root.end() && cls->is_string()) config.tokenizer_class = cls->get<std::string>();
  return config;
}

HfTokenizerConfig hf_config_from_json(std::string_view json_text, std::string_view source) {
  try {
    return hf_config_from_json_impl(json_text, source);
  } catch (const json::exception& e) {
    fail(source, ": unexpected structure: ", e.what());
  }
}

HfTokenizerConfig load_hf_tokenizer_config(const std::string& path) {
  return hf_config_from_json(read_file(path), path);
}

void apply_hf_config(Vocab& vocab, const HfTokenizerConfig& config) {
  auto resolve = [&](const std::optional<std::string>& text, const char* key, int32_t& id) {
    if (!text) return;
    for (size_t i = 0; i < vocab.tokens.size(); ++i) {
      if (vocab.tokens[i] == *text) {
        id = static_cast<int32_t>(i);
        return;
      }
    }
    fail("tokenizer_config.json: ", key, " '", *text, "' is not a token of the vocabulary");
  };
  resolve(config.bos_token, "bos_token", vocab.bos_id);
  resolve(config.eos_token, "eos_token", vocab.eos_id);
  resolve(config.pad_token, "pad_token", vocab.pad_id);
  resolve(config.unk_token, "unk_token", vocab.unk_id);
  if (config.add_bos_token && vocab.model != "gemma4") vocab.add_bos = *config.add_bos_token;
  if (config.add_eos_token) vocab.add_eos = *config.add_eos_token;
  if (config.add_prefix_space && vocab.model == "llama") {
    vocab.add_space_prefix = *config.add_prefix_space;
  }
}

void pad_vocab(Vocab& vocab, size_t n) {
  FULGUR_CHECK(vocab.tokens.size() <= n, "pad_vocab: the vocabulary has ", vocab.tokens.size(),
               " tokens, more than the requested ", n);
  if (vocab.token_types.empty()) vocab.token_types.assign(vocab.tokens.size(), TokenType::kNormal);
  for (size_t i = vocab.tokens.size(); i < n; ++i) {
    vocab.tokens.push_back(cat("[PAD", i, "]"));
    vocab.token_types.push_back(TokenType::kUnused);
    if (!vocab.scores.empty()) vocab.scores.push_back(-1000.0f);  // the converter's pad score
  }
}

}  // namespace fulgur
