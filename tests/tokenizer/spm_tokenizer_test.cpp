// Small hand-built SentencePiece ("llama") and Gemma 4 ("gemma4") vocabularies: the merge order
// each uses, the space prefix, <0xXX> byte fallback (invalid UTF-8 included, which the oracles
// cannot be given), decoding, the GGUF keys, and the errors for a broken vocabulary. The
// expectations follow llama.cpp's llm_tokenizer_spm_session and its gemma4 BPE session.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/clean_spaces.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/sentencepiece_text.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

constexpr int32_t kByte0 = 3;  // <0x00>; byte b is kByte0 + b
int32_t byte_id(unsigned char b) { return kByte0 + b; }

// 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then `normal` (text, score) from id 259.
Vocab spm_vocab(const std::vector<std::pair<std::string, float>>& normal) {
  Vocab v;
  v.model = "llama";
  v.pre = "default";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_token_text(static_cast<uint8_t>(b)));
    v.token_types.push_back(TokenType::kByte);
    v.scores.push_back(0);
  }
  for (const auto& [text, score] : normal) {
    v.tokens.push_back(text);
    v.token_types.push_back(TokenType::kNormal);
    v.scores.push_back(score);
  }
  v.unk_id = 0, v.bos_id = 1, v.eos_id = 2;
  v.add_bos = true;
  return v;
}

const std::string kSp = std::string(kSpmSpace);

TEST(SentencePiece, HighestScoreFirstLeftmostOnTies) {
  // "abc" with ab scoring above bc: [ab][c]; the other way round: [a][bc]; equal: the left pair.
  auto encode = [](float ab, float bc) {
    Vocab v = spm_vocab({{"a", -9}, {"b", -9}, {"c", -9}, {"ab", ab}, {"bc", bc}});
    v.add_space_prefix = false;
    return Tokenizer(v).encode("abc", false);
  };
  EXPECT_EQ(encode(-1, -5), (std::vector<int32_t>{262, 261}));
  EXPECT_EQ(encode(-5, -1), (std::vector<int32_t>{259, 263}));
  EXPECT_EQ(encode(-2, -2), (std::vector<int32_t>{262, 261}));
}

TEST(SentencePiece, SpacePrefixEscapingAndDecode) {
  // ids: 259 ▁, 260 a, 261 b, 262 ab, 263 ▁a, 264 ▁ab
  const Vocab v = spm_vocab({{kSp, -9}, {"a", -9}, {"b", -9}, {"ab", -1}, {kSp + "a", -3}, {kSp + "ab", -2}});
  const Tokenizer t(v);
  // "▁ab": ab (-1) merges before ▁a (-3), then ▁ + ab (-2).
  EXPECT_EQ(t.encode("ab", false), (std::vector<int32_t>{264}));
  EXPECT_EQ(t.encode("ab", false, /*add_special=*/true), (std::vector<int32_t>{1, 264}));
  // Every space is U+2581; the prefix is added once per fragment.
  EXPECT_EQ(t.encode("ab ab  a", false), (std::vector<int32_t>{264, 264, 259, 263}));
  // After each special token the next fragment gets its prefix again (llama.cpp's
  // is_prev_special); without parse_special "</s>" is text, spelt with byte tokens.
  EXPECT_EQ(t.encode("ab</s>ab", true), (std::vector<int32_t>{264, 2, 264}));
  const std::vector<int32_t> plain = t.encode("a</s>", false);
  EXPECT_EQ(plain, (std::vector<int32_t>{263, byte_id('<'), byte_id('/'), byte_id('s'), byte_id('>')}));
  // Decoding: U+2581 is a space again, the first piece loses the prefix space, byte tokens are
  // bytes, control tokens show only when asked.
  EXPECT_EQ(t.token_piece(264, true), " ab");
  EXPECT_EQ(t.decode({264, 264, 259, 263}), "ab ab  a");
  EXPECT_EQ(t.decode(plain), "a</s>");
  EXPECT_EQ(t.decode({1, 264}, true), "<s> ab");
  EXPECT_EQ(t.decode({1, 264}, false), " ab");  // the hidden BOS was the first piece
  Vocab no_prefix = v;
  no_prefix.add_space_prefix = false;
  const Tokenizer tn(no_prefix);
  EXPECT_EQ(tn.encode("ab", false), (std::vector<int32_t>{262}));
  EXPECT_EQ(tn.decode({264}), " ab");
}

TEST(SentencePiece, ByteFallbackAndInvalidUtf8) {
  Vocab v = spm_vocab({{kSp, -9}, {"a", -9}, {"b", -9}});
  v.add_space_prefix = false;
  const Tokenizer t(v);
  // é is not a token: its two bytes.
  EXPECT_EQ(t.encode("a\xc3\xa9", false), (std::vector<int32_t>{260, byte_id(0xC3), byte_id(0xA9)}));
  // A lead byte claims the length it announces whatever follows (llama.cpp's unicode_len_utf8),
  // so "\xe4b" is one symbol and its 'b' comes out as the byte token <0x62>.
  EXPECT_EQ(t.encode("a\xe4" "b", false), (std::vector<int32_t>{260, byte_id(0xE4), byte_id('b')}));
  // 0xFF announces four bytes: "\xff" "a" is one symbol, two byte tokens; "a\xff" keeps its a.
  EXPECT_EQ(t.encode("\xff" "a", false), (std::vector<int32_t>{byte_id(0xFF), byte_id('a')}));
  EXPECT_EQ(t.encode("a\xff", false), (std::vector<int32_t>{260, byte_id(0xFF)}));
  const std::string odd = "a\xe4" "b\xff\xc3";
  EXPECT_EQ(t.decode(t.encode(odd, false)), odd);
}

TEST(SentencePiece, BrokenVocabulariesAreRefused) {
  const Vocab v = spm_vocab({{kSp, -9}, {"a", -9}});
  auto error_of = [](const Vocab& bad) {
    try {
      Tokenizer t(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Vocab no_scores = v;
  no_scores.scores.clear();
  EXPECT_NE(error_of(no_scores).find("tokenizer.ggml.scores"), std::string::npos) << error_of(no_scores);
  Vocab short_scores = v;
  short_scores.scores.pop_back();
  EXPECT_NE(error_of(short_scores).find("tokenizer.ggml.scores has"), std::string::npos);
  Vocab no_byte = v;
  no_byte.tokens[byte_id('A')] = "A?";
  EXPECT_NE(error_of(no_byte).find("'<0x41>'"), std::string::npos) << error_of(no_byte);
  Vocab unknown = v;
  unknown.model = "bpe2";
  const std::string e = error_of(unknown);
  EXPECT_NE(e.find("'bpe2'"), std::string::npos) << e;
  EXPECT_NE(e.find("'llama'"), std::string::npos) << e;
}

// 0 <pad>, 1 <eos>, 2 <bos>, then the byte tokens (kByte0 + b), then `normal` from 259, merged
// by the rules in `merges` (rank = index).
Vocab gemma4_vocab(const std::vector<std::string>& normal, const std::vector<std::string>& merges) {
  Vocab v = spm_vocab({});
  v.model = "gemma4";
  v.pre = "gemma4";
  v.tokens[0] = "<pad>", v.tokens[1] = "<eos>", v.tokens[2] = "<bos>";
  v.token_types[0] = TokenType::kControl;
  for (const std::string& text : normal) {
    v.tokens.push_back(text);
    v.token_types.push_back(TokenType::kNormal);
  }
  v.scores.assign(v.tokens.size(), -1000.0f);  // gemma4 merges by rank; scores are not read
  v.merges = merges;
  v.unk_id = -1, v.bos_id = 2, v.eos_id = 1;
  return v;
}

TEST(Gemma4, RankOrderNewlineRunsAndRecoding) {
  // ids: 259 ▁, 260 a, 261 b, 262 c, 263 \n, 264 \n\n, 265 bc, 266 ab, 267 ▁a
  const Vocab v = gemma4_vocab({kSp, "a", "b", "c", "\n", "\n\n", "bc", "ab", kSp + "a"},
                               {"b c", "a b", kSp + " a"});
  const Tokenizer t(v);
  EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{260, 265}));  // rank 0 (b c) first
  EXPECT_EQ(t.encode("ab", false), (std::vector<int32_t>{266}));
  EXPECT_EQ(t.encode(" a b", false), (std::vector<int32_t>{267, 259, 261}));  // no prefix space
  // Newline runs are words of their own; a run that is a token is that token, others merge
  // (here they cannot: there is no rule for "\n \n").
  EXPECT_EQ(t.encode("a\n\nb", false), (std::vector<int32_t>{260, 264, 261}));
  EXPECT_EQ(t.encode("\n\n\n", false), (std::vector<int32_t>{263, 263, 263}));
  // llama.cpp reads the text leniently as code points before splitting: a stray byte becomes
  // U+FFFD (spelt in bytes here), an overlong "a" is an "a".
  EXPECT_EQ(t.encode("\xff", false), (std::vector<int32_t>{byte_id(0xEF), byte_id(0xBF), byte_id(0xBD)}));
  EXPECT_EQ(t.encode("\xc1\xa1" "b", false), (std::vector<int32_t>{266}));
  EXPECT_EQ(t.decode({267, 266, 264}), " aab\n\n");  // no prefix to strip
  Vocab no_merges = v;
  no_merges.merges.clear();
  EXPECT_THROW(Tokenizer{no_merges}, Error);
}

TEST(Gemma4, DecodeCleansUpSpacesAsLlamaCpp) {
  std::string a = "x?.a ?? null ; a , b . c ! d ?";
  clean_up_spaces(a);
  EXPECT_EQ(a, "x?.a?? null ; a, b. c! d?");
  std::string b = "'D 's 't 're 've 'm 'll 'd";
  clean_up_spaces(b);
  EXPECT_EQ(b, "'D's 't're've'm 'll 'd");
  std::string c = "a ' b ' 's";  // " ' " loses both spaces; the second space no longer counts
  clean_up_spaces(c);
  EXPECT_EQ(c, "a'b''s");
  std::string first = " ?";  // a leading space goes too
  clean_up_spaces(first);
  EXPECT_EQ(first, "?");
  // decode() applies it to gemma4 text only.
  const Vocab v = gemma4_vocab({kSp, "a", "?", kSp + "a"}, {kSp + " a"});
  EXPECT_EQ(Tokenizer(v).decode({260, 259, 261}), "a?");
  Vocab spm = spm_vocab({{kSp, -9}, {"a", -9}, {"?", -9}});
  spm.add_space_prefix = false;
  EXPECT_EQ(Tokenizer(spm).decode({260, 259, 261}), "a ?");
}

TEST(GgufVocab, SentencePieceKeysRoundTrip) {
  Vocab v = spm_vocab({{kSp, -9}, {"a", -9}, {kSp + "a", -1}});
  GgufWriter w;
  write_vocab(w, v);
  {
    const GgufReader r(w.to_bytes(), "spm.gguf");
    EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(r.get_string("tokenizer.ggml.pre"), "default");
    EXPECT_FALSE(r.has("tokenizer.ggml.merges"));
    EXPECT_FALSE(r.has("tokenizer.ggml.add_space_prefix"));  // llama.cpp's default stands
    const Vocab back = read_vocab(r);
    EXPECT_EQ(back.tokens, v.tokens);
    EXPECT_EQ(back.scores, v.scores);
    EXPECT_EQ(back.token_types, v.token_types);
    EXPECT_FALSE(back.add_space_prefix.has_value());
    EXPECT_TRUE(back.add_bos);
  }
  v.add_space_prefix = false;
  v.add_bos = false;
  write_vocab(w, v);
  {
    const GgufReader r(w.to_bytes(), "spm.gguf");
    const Vocab back = read_vocab(r);
    EXPECT_EQ(back.add_space_prefix, std::optional<bool>(false));
    EXPECT_FALSE(back.add_bos);
  }
  // llama.cpp's defaults where the keys are absent: bos 1, eos 2, unk 0, add_bos true.
  GgufWriter bare;
  bare.set_string("tokenizer.ggml.model", "llama");
  bare.set_string_array("tokenizer.ggml.tokens", v.tokens);
  bare.set_array("tokenizer.ggml.scores", v.scores);
  {
    const Vocab back = read_vocab(GgufReader(bare.to_bytes(), "bare.gguf"));
    EXPECT_EQ(back.bos_id, 1);
    EXPECT_EQ(back.eos_id, 2);
    EXPECT_EQ(back.unk_id, 0);
    EXPECT_TRUE(back.add_bos);
  }
  GgufWriter no_scores;
  no_scores.set_string("tokenizer.ggml.model", "llama");
  no_scores.set_string_array("tokenizer.ggml.tokens", v.tokens);
  try {
    read_vocab(GgufReader(no_scores.to_bytes(), "noscores.gguf"));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.scores"), std::string::npos) << e.what();
  }
  GgufWriter bert;
  bert.set_string("tokenizer.ggml.model", "bert");
  bert.set_string_array("tokenizer.ggml.tokens", v.tokens);
  try {
    read_vocab(GgufReader(bert.to_bytes(), "bert.gguf"));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bert'"), std::string::npos) << e.what();
  }
}

TEST(GgufVocab, Gemma4KeysRoundTrip) {
  Vocab v = gemma4_vocab({kSp, "a", kSp + "a"}, {kSp + " a"});
  v.add_bos = false;  // llama.cpp adds BOS for gemma4 whatever the file says
  v.add_space_prefix = false;
  GgufWriter w;
  write_vocab(w, v);
  const GgufReader r(w.to_bytes(), "g4.gguf");
  EXPECT_FALSE(r.has("tokenizer.ggml.pre"));
  EXPECT_EQ(r.get_string_array("tokenizer.ggml.merges"), v.merges);
  const Vocab back = read_vocab(r);
  EXPECT_EQ(back.model, "gemma4");
  EXPECT_EQ(back.merges, v.merges);
  EXPECT_EQ(back.scores, v.scores);
  EXPECT_TRUE(back.add_bos);
  GgufWriter no_merges;
  no_merges.set_string("tokenizer.ggml.model", "gemma4");
  no_merges.set_string_array("tokenizer.ggml.tokens", v.tokens);
  EXPECT_THROW(read_vocab(GgufReader(no_merges.to_bytes(), "g4.gguf")), Error);
}

}  // namespace
}  // namespace fulgur
