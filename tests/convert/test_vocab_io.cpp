// Vocab <-> GGUF tokenizer keys, the builtin byte vocabulary, and Vocab -> HF tokenizer files.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/builtin_vocab.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

void expect_same_vocab(const Vocab& a, const Vocab& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.pre, b.pre);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.token_types.size(), b.token_types.size());
  for (size_t i = 0; i < a.token_types.size(); ++i) {
    EXPECT_EQ(a.token_types[i], b.token_types[i]) << "token " << i << " '" << a.tokens[i] << "'";
  }
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
  EXPECT_EQ(a.pad_id, b.pad_id);
  EXPECT_EQ(a.unk_id, b.unk_id);
  EXPECT_EQ(a.add_bos, b.add_bos);
  EXPECT_EQ(a.add_eos, b.add_eos);
  EXPECT_EQ(a.ignore_merges, b.ignore_merges);
  EXPECT_EQ(a.normalizer, b.normalizer);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no fulgur::Error thrown";
  return "";
}

TEST(BuiltinVocab, ShapeAndDeterminism) {
  const Vocab v = builtin_byte_vocab();
  ASSERT_GE(v.tokens.size(), 256u + 200u + 3u);
  EXPECT_GE(v.merges.size(), 200u);
  EXPECT_LE(v.merges.size(), static_cast<size_t>(kBuiltinMaxMerges));
  EXPECT_EQ(v.tokens[' '], "\xC4\xA0");  // U+0120 'Ġ'
  EXPECT_EQ(v.tokens['a'], "a");
  EXPECT_EQ(v.pre, "qwen2");
  const size_t n = v.tokens.size();
  EXPECT_EQ(v.tokens[n - 3], "<|endoftext|>");
  EXPECT_EQ(v.tokens[n - 2], "<|im_start|>");
  EXPECT_EQ(v.tokens[n - 1], "<|im_end|>");
  for (size_t i = n - 3; i < n; ++i) EXPECT_EQ(v.token_types[i], TokenType::kControl);
  EXPECT_EQ(v.eos_id, static_cast<int32_t>(n - 3));
  EXPECT_EQ(v.bos_id, -1);
  expect_same_vocab(v, builtin_byte_vocab());
  // The first merge can only join two single-byte tokens, and every merge's result is a token.
  const std::string& first = v.merges.front();
  const size_t sp = first.find(' ', 1);
  ASSERT_NE(sp, std::string::npos);
  const auto byte_token = [&](const std::string& s) {
    return std::find(v.tokens.begin(), v.tokens.begin() + 256, s) != v.tokens.begin() + 256;
  };
  EXPECT_TRUE(byte_token(first.substr(0, sp))) << first;
  EXPECT_TRUE(byte_token(first.substr(sp + 1))) << first;
  for (const std::string& m : v.merges) {
    const size_t at = m.find(' ', 1);
    const std::string joined = m.substr(0, at) + m.substr(at + 1);
    EXPECT_NE(std::find(v.tokens.begin(), v.tokens.end(), joined), v.tokens.end()) << m;
  }
}

TEST(BuiltinVocab, TokenizesAndRoundTrips) {
  const Tokenizer tok(builtin_byte_vocab());
  const std::string text = "The quick brown fox returns the value of the counter.\n    def f():";
  const std::vector<int32_t> ids = tok.encode(text, false);
  EXPECT_LT(ids.size(), text.size() / 2);  // the merges compress common English / code
  EXPECT_EQ(tok.decode(ids), text);
  const std::vector<int32_t> chat = tok.encode("<|im_start|>user\nhi<|im_end|>", true);
  EXPECT_EQ(chat.front(), tok.token_to_id("<|im_start|>"));
  EXPECT_EQ(chat.back(), tok.token_to_id("<|im_end|>"));
}

TEST(GgufVocab, RoundTrip) {
  Vocab v = builtin_byte_vocab();
  v.bos_id = 5;
  v.unk_id = 7;
  v.eot_id = static_cast<int32_t>(v.tokens.size() - 1);
  v.mask_id = 3;
  v.add_bos = true;
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  write_vocab(w, v, "TEMPLATE");
  const GgufReader r(w.to_bytes(), "vocab.gguf");
  EXPECT_EQ(r.get("tokenizer.ggml.token_type").element_type(), GgufType::kInt32);
  EXPECT_EQ(r.get("tokenizer.ggml.eos_token_id").type(), GgufType::kUint32);
  EXPECT_EQ(r.get("tokenizer.ggml.padding_token_id").type(), GgufType::kUint32);
  EXPECT_EQ(r.get("tokenizer.ggml.add_bos_token").type(), GgufType::kBool);
  EXPECT_FALSE(r.has("tokenizer.ggml.add_eos_token"));
  EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(r.get_string("tokenizer.chat_template"), "TEMPLATE");
  const Vocab back = read_vocab(r);
  expect_same_vocab(v, back);
  EXPECT_EQ(back.eot_id, v.eot_id);
  EXPECT_EQ(back.mask_id, v.mask_id);
}

TEST(GgufVocab, Errors) {
  GgufWriter none;
  none.set_string("general.architecture", "qwen3");
  const GgufReader r0(none.to_bytes(), "bare.gguf");
  EXPECT_NE(error_of([&] { read_vocab(r0); }).find("has no tokenizer"), std::string::npos);

  GgufWriter w;
  write_vocab(w, builtin_byte_vocab());
  w.set_array("tokenizer.ggml.token_type", std::vector<int32_t>{1, 1, 1});
  const GgufReader r1(w.to_bytes(), "short.gguf");
  const std::string e1 = error_of([&] { read_vocab(r1); });
  EXPECT_NE(e1.find("tokenizer.ggml.token_type"), std::string::npos) << e1;
  EXPECT_NE(e1.find("expected"), std::string::npos) << e1;

  write_vocab(w, builtin_byte_vocab());
  w.set_u32("tokenizer.ggml.eos_token_id", 1u << 20);
  const GgufReader r2(w.to_bytes(), "eos.gguf");
  EXPECT_NE(error_of([&] { read_vocab(r2); }).find("eos_token_id"), std::string::npos);

  write_vocab(w, builtin_byte_vocab());
  w.set_string("tokenizer.ggml.pre", "nonsense");
  const GgufReader r3(w.to_bytes(), "pre.gguf");
  EXPECT_NE(error_of([&] { read_vocab(r3); }).find("nonsense"), std::string::npos);

  write_vocab(w, builtin_byte_vocab());
  w.set_array("tokenizer.ggml.merges", std::vector<int32_t>{1});
  const GgufReader r4(w.to_bytes(), "merges.gguf");
  EXPECT_NE(error_of([&] { read_vocab(r4); }).find("tokenizer.ggml.merges"), std::string::npos);

  Vocab bad = builtin_byte_vocab();
  bad.eos_id = static_cast<int32_t>(bad.tokens.size());
  GgufWriter w2;
  EXPECT_NE(error_of([&] { write_vocab(w2, bad); }).find("eos_token_id"), std::string::npos);
}

Vocab from_hf(const Vocab& v, const std::string& chat_template = "") {
  Vocab back = vocab_from_hf_json(vocab_to_hf_json(v));
  apply_hf_config(back, hf_config_from_json(vocab_to_hf_tokenizer_config_json(v, chat_template)));
  return back;
}

TEST(HfVocabJson, BuiltinRoundTrip) {
  const Vocab v = builtin_byte_vocab();
  expect_same_vocab(v, from_hf(v));
  const HfTokenizerConfig tc =
      hf_config_from_json(vocab_to_hf_tokenizer_config_json(v, builtin_chat_template()));
  EXPECT_EQ(tc.chat_template, builtin_chat_template());
  EXPECT_EQ(tc.eos_token, "<|endoftext|>");
  EXPECT_FALSE(tc.bos_token.has_value());
}

TEST(HfVocabJson, VariantsRoundTrip) {
  Vocab v = builtin_byte_vocab();
  v.bos_id = static_cast<int32_t>(v.tokens.size() - 2);  // <|im_start|>, just some special token
  pad_vocab(v, v.tokens.size() + 2);  // [PAD<id>] fillers in the middle: left out, recreated
  v.tokens.push_back("<think>");      // an added non-special token
  v.token_types.push_back(TokenType::kUserDefined);
  v.add_bos = true;
  v.normalizer = Normalizer::kNfc;
  expect_same_vocab(v, from_hf(v));

  // Trailing fillers are not in tokenizer.json at all (as in real HF checkpoints, where
  // config.json vocab_size says how far to pad); the converter pads them back.
  Vocab padded = v;
  pad_vocab(padded, v.tokens.size() + 3);
  Vocab back = from_hf(padded);
  EXPECT_EQ(back.tokens.size(), v.tokens.size());
  pad_vocab(back, padded.tokens.size());
  expect_same_vocab(padded, back);

  v.add_bos = false;
  v.add_eos = true;
  v.pre = "gpt2";
  v.normalizer = Normalizer::kNone;
  expect_same_vocab(v, from_hf(v));

  v.pre = "llama-bpe";
  v.ignore_merges = true;
  expect_same_vocab(v, from_hf(v));
}

TEST(HfVocabJson, Errors) {
  Vocab v = builtin_byte_vocab();
  v.tokens[300] = v.tokens[299];
  EXPECT_NE(error_of([&] { vocab_to_hf_json(v); }).find("appears twice"), std::string::npos);
  v = builtin_byte_vocab();
  v.pre = "nonsense";
  EXPECT_NE(error_of([&] { vocab_to_hf_json(v); }).find("nonsense"), std::string::npos);
}

}  // namespace
}  // namespace fulgur
