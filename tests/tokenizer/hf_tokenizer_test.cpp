// tokenizer.json / tokenizer_config.json parsing on small synthetic files: pre-tokenizer
// recognition from its definition, added tokens, merges forms, and errors on bad input.
#include "tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using json = nlohmann::json;

const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string ch(uint8_t b) {
  std::string s;
  append_utf8(s, byte_to_codepoint(b));
  return s;
}

json split_then_byte_level(const std::string& regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", regex}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"},
             {"add_prefix_space", false},
             {"trim_offsets", false},
             {"use_regex", false}}}}};
}

// 256 byte tokens, "Ġt" and "he" merges, two added tokens.
json tiny_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[ch(static_cast<uint8_t>(b))] = b;
  vocab[ch(' ') + "t"] = 256;
  vocab["he"] = 257;
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 258}, {"content", "<|im_end|>"}, {"special", true}},
            {{"id", 259}, {"content", "<think>"}, {"special", false}},
            {{"id", 261}, {"content", "<|fim_pad|>"}, {"special", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", split_then_byte_level(kQwen2Regex)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", json::array({ch(' ') + " t", json::array({"h", "e"})})}}}};
}

TEST(HfTokenizer, TinyTokenizerLoads) {
  Vocab v = vocab_from_hf_json(tiny_tokenizer().dump());
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.normalizer, Normalizer::kNone);
  ASSERT_EQ(v.tokens.size(), 262u);
  EXPECT_EQ(v.tokens[260], "[PAD260]");  // a hole in the id range
  EXPECT_EQ(v.token_types[260], TokenType::kUnused);
  EXPECT_EQ(v.token_types[258], TokenType::kControl);
  EXPECT_EQ(v.token_types[259], TokenType::kUserDefined);
  EXPECT_EQ(v.token_types[261], TokenType::kControl);  // "<|...|>" counts as control
  EXPECT_EQ(v.merges, (std::vector<std::string>{ch(' ') + " t", "h e"}));
  Tokenizer t(v);
  EXPECT_EQ(t.encode(" the<|im_end|>", true), (std::vector<int32_t>{256, 257, 258}));
  EXPECT_EQ(t.decode({256, 257, 259}), " the<think>");
}

TEST(HfTokenizer, PreTokenizerRecognisedFromDefinition) {
  json j = tiny_tokenizer();
  j["pre_tokenizer"] = split_then_byte_level(kLlama3Regex);
  EXPECT_EQ(vocab_from_hf_json(j.dump()).pre, "llama-bpe");
  // The explicit-class spelling of the contraction group means the same.
  std::string spelt = kQwen2Regex;
  spelt.replace(0, std::string("(?i:'s|'t|'re|'ve|'m|'ll|'d)").size(),
                "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])");
  j["pre_tokenizer"] = split_then_byte_level(spelt);
  EXPECT_EQ(vocab_from_hf_json(j.dump()).pre, "qwen2");
  // GPT-2: ByteLevel with its own regex.
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  EXPECT_EQ(vocab_from_hf_json(j.dump()).pre, "gpt2");
  // A bare Split (no Sequence) followed by nothing is not byte-level.
  j["pre_tokenizer"] = split_then_byte_level(kQwen2Regex)["pretokenizers"][0];
  EXPECT_THROW(vocab_from_hf_json(j.dump()), Error);
}

TEST(HfTokenizer, UnknownRegexIsAnErrorNamingIt) {
  json j = tiny_tokenizer();
  j["pre_tokenizer"] = split_then_byte_level(R"(\p{L}+|\p{N}{1,2}|\s+)");
  try {
    vocab_from_hf_json(j.dump());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(R"(\p{N}{1,2})"), std::string::npos) << e.what();
  }
}

TEST(HfTokenizer, UnsupportedDefinitionsThrow) {
  auto expect_error = [](const std::function<void(json&)>& edit) {
    json j = tiny_tokenizer();
    edit(j);
    EXPECT_THROW(vocab_from_hf_json(j.dump()), Error) << j["pre_tokenizer"].dump();
  };
  expect_error([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; });
  expect_error([](json& j) { j["pre_tokenizer"] = nullptr; });
  expect_error([](json& j) {
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", " "}};
  });
  expect_error([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; });
  expect_error([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; });
  expect_error([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; });
  expect_error([](json& j) { j["model"]["type"] = "WordPiece"; });
  expect_error([](json& j) { j["model"]["byte_fallback"] = true; });
  expect_error([](json& j) { j["model"]["vocab"]["he"] = "257"; });
  expect_error([](json& j) { j["model"]["vocab"]["he"] = -3; });
  expect_error([](json& j) { j["model"]["merges"].push_back(42); });
  expect_error([](json& j) { j["added_tokens"][0]["id"] = 257; });  // clashes with "he"
  expect_error([](json& j) { j["added_tokens"][0].erase("content"); });
  expect_error([](json& j) { j.erase("model"); });
  expect_error([](json& j) { j["model"]["vocab"] = json::array(); });
}

TEST(HfTokenizer, MalformedJsonThrows) {
  EXPECT_THROW(vocab_from_hf_json("{\"model\": "), Error);
  EXPECT_THROW(vocab_from_hf_json("[1, 2]"), Error);
  EXPECT_THROW(vocab_from_hf_json(""), Error);
  EXPECT_THROW(load_hf_tokenizer("/nonexistent/tokenizer.json"), Error);
  EXPECT_THROW(hf_config_from_json("{\"bos_token\": 3}"), Error);
  EXPECT_THROW(hf_config_from_json("{"), Error);
  // Merges whose pieces are not tokens load as a Vocab but are rejected by the Tokenizer.
  json j = tiny_tokenizer();
  j["model"]["merges"].push_back("x yz");
  Vocab v = vocab_from_hf_json(j.dump());
  EXPECT_THROW(Tokenizer{v}, Error);
}

TEST(HfTokenizer, NfcNormalizerAndTemplateProcessing) {
  json j = tiny_tokenizer();
  j["normalizer"] = {{"type", "NFC"}};
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<|im_end|>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"special_tokens", {{"<|im_end|>", {{"id", "<|im_end|>"}, {"ids", {258}}}}}}};
  Vocab v = vocab_from_hf_json(j.dump());
  EXPECT_EQ(v.normalizer, Normalizer::kNfc);
  EXPECT_TRUE(v.add_bos);
  EXPECT_EQ(v.bos_id, 258);
  EXPECT_FALSE(v.add_eos);
  Tokenizer t(v);
  // e + COMBINING ACUTE is composed to é before byte-level BPE.
  EXPECT_EQ(t.encode("e\xcc\x81", false, true), (std::vector<int32_t>{258, 0xC3, 0xA9}));
}

TEST(HfTokenizer, ConfigParsesAndApplies) {
  const std::string text = R"({
    "add_bos_token": false, "add_eos_token": true,
    "bos_token": {"__type": "AddedToken", "content": "<|im_end|>", "special": true},
    "eos_token": "<think>", "pad_token": null,
    "chat_template": [{"name": "default", "template": "{{ x }}"},
                      {"name": "tool_use", "template": "{{ y }}"}],
    "tokenizer_class": "Qwen2Tokenizer"})";
  const HfTokenizerConfig c = hf_config_from_json(text);
  EXPECT_EQ(c.bos_token, "<|im_end|>");
  EXPECT_EQ(c.eos_token, "<think>");
  EXPECT_FALSE(c.pad_token.has_value());
  EXPECT_EQ(c.add_bos_token, false);
  EXPECT_EQ(c.add_eos_token, true);
  EXPECT_EQ(c.chat_template, "{{ x }}");
  EXPECT_EQ(c.named_chat_templates.at("tool_use"), "{{ y }}");
  EXPECT_EQ(c.tokenizer_class, "Qwen2Tokenizer");
  Vocab v = vocab_from_hf_json(tiny_tokenizer().dump());
  apply_hf_config(v, c);
  EXPECT_EQ(v.bos_id, 258);
  EXPECT_EQ(v.eos_id, 259);
  EXPECT_EQ(v.pad_id, -1);
  EXPECT_TRUE(v.add_eos);
  HfTokenizerConfig bad;
  bad.eos_token = "<nope>";
  EXPECT_THROW(apply_hf_config(v, bad), Error);
  pad_vocab(v, 300);
  EXPECT_EQ(v.tokens.size(), 300u);
  EXPECT_EQ(v.token_types[299], TokenType::kUnused);
  EXPECT_THROW(pad_vocab(v, 10), Error);
}

}  // namespace
}  // namespace fulgur
