// Texts that exercise a tokenizer, shared by the oracle tests of every vocabulary: code, prose
// in many scripts, emoji, digit runs, whitespace runs, punctuation (no special tokens: each test
// adds its vocabulary's own).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fulgur::test {

inline std::vector<std::string> general_corpus() {
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
  };
}

// Seeded random strings from a pool of "interesting" characters (plus `extra_pool`, e.g. the
// vocabulary's special tokens): finds disagreements in the interplay of a pre-tokenizer's
// alternatives, or of merges, that hand-written cases miss.
inline std::vector<std::string> random_corpus(size_t n, uint32_t seed,
                                              const std::vector<std::string>& extra_pool) {
  std::vector<std::string> pool = {
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
      "\xef\xbc\x8c",
      "\xe3\x80\x82",
  };
  pool.insert(pool.end(), extra_pool.begin(), extra_pool.end());
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

// Digit runs and runs of each kind of whitespace, 1 to 24 long, alone and between letters.
inline std::vector<std::string> run_corpus() {
  std::vector<std::string> out;
  for (int n = 1; n <= 24; ++n) {
    std::string digits;
    for (int i = 0; i < n; ++i) digits += static_cast<char>('0' + (i * 7 + n) % 10);
    out.push_back(digits);
    out.push_back("x" + digits + "y");
    for (const char* ws : {" ", "\t", "\n", "\r\n", " \n", "\u00a0"}) {
      std::string run;
      for (int i = 0; i < n; ++i) run += ws;
      out.push_back(run);
      out.push_back("a" + run + "b");
      out.push_back("a" + run);
    }
  }
  return out;
}

}  // namespace fulgur::test
