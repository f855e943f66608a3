#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include "core/error.h"

namespace fulgur {
namespace {

// The contraction group as Hugging Face writes it, and the same set spelt without the inline
// case-insensitive flag (llama.cpp's spelling). Under UCP a caseless 's' would also match U+017F
// (long s) and 'k' the Kelvin sign; the explicit classes keep it ASCII like llama.cpp and
// transformers.js do.
constexpr std::string_view kContractionsHf = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr std::string_view kContractions =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

std::string with_contractions(std::string_view tail) {
  return std::string(kContractions) + std::string(tail);
}

std::vector<PreTokenizerDef> make_known() {
  // Regexes from archs-gguf.md §5.3. gpt2's is the one ByteLevel(use_regex=true) applies.
  const std::string qwen2 = with_contractions(
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  const std::string qwen35 = with_contractions(
      R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  const std::string llama3 = with_contractions(
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  const std::string gpt2 =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  // Mistral's tekken (Nemo, Small 3, Pixtral 12B): Hugging Face's Split regex has a
  // capitalised-word class ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* then [\p{Ll}\p{Lm}\p{Lo}\p{M}]+)
  // that llama.cpp's regex engine cannot spell; llama.cpp runs "a letter that is not a-z" and
  // "a letter that is not A-Z" in its place, which agree on ASCII and take every other letter as
  // both cases (and marks as neither). fulgur runs llama.cpp's, to give llama.cpp's ids.
  const std::string tekken_hf =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?)"
      R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string tekken =
      R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+|[^\r\n\p{L}\p{N}]?)"
      R"((?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // OpenAI's o200k (gpt-4o, gpt-oss): tekken's letter classes with a contraction after either
  // word form, and digits in runs of up to three. As for tekken, llama.cpp runs its own spelling
  // of the letter classes, so fulgur does too.
  const std::string c = std::string(kContractions) + "?";
  const std::string gpt4o_hf =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" + c +
      R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" + c +
      R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string gpt4o =
      R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)" + c +
      R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)" + c +
      R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // The first entry with a given regex list is the name pre_tokenizer_name_for() returns.
  return {
      {"qwen2", {qwen2}, false},         {"deepseek-r1-qwen", {qwen2}, false},
      {"qwen35", {qwen35}, false},       {"llama-bpe", {llama3}, true, true},
      {"llama3", {llama3}, true, true},  {"llama-v3", {llama3}, true, true},
      {"pixtral", {llama3}, true, true}, {"gpt2", {gpt2}, false},
      {"tekken", {tekken}, true, true, {tekken_hf}},
      {"gpt-4o", {gpt4o}, false, false, {gpt4o_hf}},
  };
}

// Every (?i:...) contraction group in its explicit spelling (gpt-4o's regex has two).
std::string canonical(std::string_view regex) {
  std::string out(regex);
  for (size_t at = out.find(kContractionsHf); at != std::string::npos; at = out.find(kContractionsHf, at)) {
    out.replace(at, kContractionsHf.size(), kContractions);
  }
  return out;
}

// Unicode White_Space, which is what \s means to Oniguruma (Hugging Face tokenizers) and to
// llama.cpp. PCRE2's UCP \s lacks U+0085, so \s and \S are spelt out before compiling.
constexpr std::string_view kWhiteSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string expand_white_space(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        FULGUR_CHECK(!in_class, "pre-tokenizer regex '", pattern,
                     "': \\S inside a character class is not supported");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
    } else if (c == ']' && in_class) {
      in_class = false;
    }
    out += c;
  }
  return out;
}

// Per-thread match state: one ovector pair is all a split needs, and the JIT stack is sized for
// long runs (a megabyte of spaces) without failing.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  FULGUR_CHECK(s.data && s.context, "PCRE2: out of memory creating match data");
  return s;
}

}  // namespace

const std::vector<PreTokenizerDef>& known_pre_tokenizers() {
  static const std::vector<PreTokenizerDef> known = make_known();
  return known;
}

const PreTokenizerDef& find_pre_tokenizer(std::string_view name) {
  for (const PreTokenizerDef& def : known_pre_tokenizers()) {
    if (def.name == name) return def;
  }
  std::string names;
  for (const PreTokenizerDef& def : known_pre_tokenizers()) names += " " + def.name;
  fail("unsupported tokenizer.ggml.pre '", name, "' (supported:", names, ")");
}

std::string pre_tokenizer_name_for(const std::vector<std::string>& hf_regexes) {
  std::vector<std::string> wanted;
  for (const std::string& r : hf_regexes) wanted.push_back(canonical(r));
  for (const PreTokenizerDef& def : known_pre_tokenizers()) {
    if ((def.hf_regexes.empty() ? def.regexes : def.hf_regexes) == wanted) return def.name;
  }
  return "";
}

bool default_ignore_merges(std::string_view name) {
  return find_pre_tokenizer(name).ignore_merges;
}

bool default_add_bos(std::string_view name) { return !name.empty() && find_pre_tokenizer(name).add_bos; }

PreTokenizer::PreTokenizer(std::string_view name) : name_(name) {
  const PreTokenizerDef& def = find_pre_tokenizer(name);
  for (const std::string& regex : def.regexes) {
    const std::string pattern = expand_white_space(regex);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // MATCH_INVALID_UTF: arbitrary bytes may reach us; invalid sequences simply never match
    // and end up in the gaps between matches instead of failing the whole call.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      for (pcre2_real_code_8* c : codes_) pcre2_code_free(c);
      fail("pre-tokenizer '", name, "': PCRE2 cannot compile regex at offset ", error_offset, ": ",
           reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // failure just means the interpreter is used
    codes_.push_back(code);
  }
}

PreTokenizer::~PreTokenizer() {
  for (pcre2_real_code_8* c : codes_) pcre2_code_free(c);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out,
                         std::vector<std::string_view>& scratch_pieces) const {
  if (codes_.size() == 1) {
    split_one(0, text, out);
    return;
  }
  // Several regexes: each one re-splits every piece the previous one produced.
  std::vector<std::string_view> current{text};
  for (size_t r = 0; r < codes_.size(); ++r) {
    scratch_pieces.clear();
    for (std::string_view piece : current) split_one(r, piece, scratch_pieces);
    current.swap(scratch_pieces);
  }
  out.insert(out.end(), current.begin(), current.end());
}

void PreTokenizer::split_one(size_t regex_index, std::string_view text,
                             std::vector<std::string_view>& out) const {
  MatchScratch& s = scratch();
  const pcre2_code* code = codes_[regex_index];
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t emitted = 0;  // end of the last piece handed out
  size_t search = 0;   // where the next match attempt starts
  while (search < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), search, 0, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      fail("pre-tokenizer '", name_, "': PCRE2 match failed at byte ", search, ": ",
           reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {  // an empty match cannot cut anything; step past one byte and go on
      search = begin + 1;
      continue;
    }
    if (begin > emitted) out.push_back(text.substr(emitted, begin - emitted));
    out.push_back(text.substr(begin, end - begin));
    emitted = search = end;
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
}

}  // namespace fulgur
