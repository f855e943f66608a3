// Pre-tokenizers: the regex splitters that cut text into words before BPE, selected by the
// llama.cpp name stored in tokenizer.ggml.pre (archs-gguf.md §5.3). Matching uses PCRE2 with
// UTF + UCP (JIT when the platform has it), so \p{L}, \p{N}, \p{M} follow Unicode categories.
#pragma once

#include <string>
#include <string_view>
#include <vector>

struct pcre2_real_code_8;  // pcre2_code_8 from <pcre2.h>, kept out of this header

namespace fulgur {

// The regexes (in Hugging Face tokenizer.json spelling, case-insensitive contraction group
// written out as explicit classes) that define a named pre-tokenizer.
struct PreTokenizerDef {
  std::string name;                  // tokenizer.ggml.pre value
  std::vector<std::string> regexes;  // applied in sequence, each with "Isolated" behaviour
  bool ignore_merges = false;        // llama.cpp's default for this pre-type
  bool add_bos = false;              // llama.cpp's default when the file has no add_bos_token
  // The tokenizer.json spelling, where llama.cpp runs a different regex from the one Hugging Face
  // declares (tekken); empty when it is `regexes`.
  std::vector<std::string> hf_regexes = {};
};

// Every pre-tokenizer fulgur knows, aliases included (e.g. "llama3" for "llama-bpe").
const std::vector<PreTokenizerDef>& known_pre_tokenizers();

// Throws fulgur::Error naming `name` and listing the supported ones when unknown.
const PreTokenizerDef& find_pre_tokenizer(std::string_view name);

// Maps the regexes of a tokenizer.json pre_tokenizer (in order) to a llama.cpp name, or returns
// "" when no known pre-tokenizer has exactly these regexes. Accepts both the (?i:'s|...) and the
// explicit-class spelling of the contraction group.
std::string pre_tokenizer_name_for(const std::vector<std::string>& hf_regexes);

// ignore_merges as llama.cpp sets it for a GGUF whose tokenizer.ggml.pre is `name`.
bool default_ignore_merges(std::string_view name);
// add_bos as llama.cpp sets it for such a GGUF without tokenizer.ggml.add_bos_token ("" : false).
bool default_add_bos(std::string_view name);

// A compiled pre-tokenizer. Immutable after construction, so one instance may be used from
// several threads at once (match scratch space is per thread).
class PreTokenizer {
 public:
  explicit PreTokenizer(std::string_view name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  const std::string& name() const { return name_; }

  // Appends the pre-tokens of `text` to `out` as views into `text`; together they cover `text`
  // exactly and in order (bytes no regex matches, e.g. invalid UTF-8, become pieces too).
  // `scratch` is reused between calls to avoid allocating.
  void split(std::string_view text, std::vector<std::string_view>& out,
             std::vector<std::string_view>& scratch) const;

 private:
  void split_one(size_t regex_index, std::string_view text,
                 std::vector<std::string_view>& out) const;

  std::string name_;
  std::vector<pcre2_real_code_8*> codes_;  // [n_regexes] compiled patterns, owned
};

}  // namespace fulgur
