#include "tokenizer/builtin_vocab.h"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using json = nlohmann::json;

// Training text for the builtin merges: plain English and a little Python / C, so that the
// merges cover spaces, indentation, common words and punctuation of both. Written for fulgur.
constexpr std::string_view kTrainingText = R"TXT(
The quick brown fox jumps over the lazy dog. The dog was not amused, and the fox ran into the
forest where the other foxes were waiting for the evening meal. In the morning the sun rose over
the hills and the birds started to sing their songs. People in the town went to work, children
went to school, and the market opened its doors at eight o'clock. There is nothing unusual about
this story; it is only a text that gives the tokenizer some common words to learn from.

A language model reads a sequence of tokens and predicts the next one. When the model is small,
the prediction is often wrong, but the test only needs the numbers to be the same every time.
Speculative decoding lets a small draft model propose several tokens at once, and the large
target model checks all of them in a single forward pass. Tokens that the target agrees with are
accepted, and the first one that differs is replaced by the target's own choice, so the output
is exactly the same as without the draft.

def fibonacci(n):
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    a, b = 0, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return b


class Counter:
    def __init__(self, start=0):
        self.value = start

    def increment(self, step=1):
        self.value += step
        return self.value

    def __repr__(self):
        return f"Counter(value={self.value})"


def read_lines(path):
    with open(path, "r", encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            yield line


if __name__ == "__main__":
    counter = Counter()
    for i in range(10):
        counter.increment(i)
    print("total:", counter.value)
    print([fibonacci(i) for i in range(12)])

int main(int argc, char** argv) {
    int total = 0;
    for (int i = 0; i < argc; ++i) {
        total += (int)strlen(argv[i]);
    }
    printf("%d\n", total);
    return 0;
}

The return value of the function is the number of characters in all the arguments. If the
function returns zero, the program did not receive any input. The value of the counter is
printed at the end, and the list of numbers follows it on the next line.
)TXT";

constexpr const char* kSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

// Byte-level symbols of a pre-token: one bytes_to_unicode character per byte.
std::vector<std::string> byte_symbols(std::string_view word) {
  std::vector<std::string> out;
  out.reserve(word.size());
  for (unsigned char c : word) {
    std::string s;
    append_utf8(s, byte_to_codepoint(c));
    out.push_back(std::move(s));
  }
  return out;
}

// Classic BPE training over the pre-tokenized text (word counts, repeatedly merge the most
// frequent adjacent pair). std::map keeps every step independent of hashing and platform.
std::vector<std::pair<std::string, std::string>> train_merges() {
  const PreTokenizer pre("qwen2");
  std::vector<std::string_view> pieces, scratch;
  pre.split(kTrainingText, pieces, scratch);
  std::map<std::string, int64_t> word_counts;
  for (std::string_view p : pieces) ++word_counts[std::string(p)];
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;  // [n_words] symbols, count
  for (const auto& [w, c] : word_counts) words.emplace_back(byte_symbols(w), c);

  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(merges.size()) < kBuiltinMaxMerges) {
    std::map<std::pair<std::string, std::string>, int64_t> pair_counts;
    for (const auto& [syms, c] : words) {
      for (size_t i = 0; i + 1 < syms.size(); ++i) pair_counts[{syms[i], syms[i + 1]}] += c;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    int64_t best_count = 1;  // a pair seen once teaches nothing
    for (const auto& [pair, c] : pair_counts) {  // ascending pair order: ties keep the smaller
      if (c > best_count) best = &pair, best_count = c;
    }
    if (best == nullptr) break;
    const std::pair<std::string, std::string> m = *best;
    for (auto& [syms, c] : words) {
      std::vector<std::string> merged;
      merged.reserve(syms.size());
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == m.first && syms[i + 1] == m.second) {
          merged.push_back(m.first + m.second);
          ++i;
        } else {
          merged.push_back(syms[i]);
        }
      }
      syms = std::move(merged);
    }
    merges.push_back(m);
  }
  return merges;
}

Vocab make_builtin_vocab() {
  Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    v.tokens.push_back(std::move(s));
  }
  std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
  for (const auto& [left, right] : train_merges()) {
    v.merges.push_back(left + " " + right);
    // Two merges can spell the same string ("a"+"bc", "ab"+"c"); it is one token.
    if (seen.insert(left + right).second) v.tokens.push_back(left + right);
  }
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  for (const char* s : kSpecials) {
    v.tokens.emplace_back(s);
    v.token_types.push_back(TokenType::kControl);
  }
  const auto eot = static_cast<int32_t>(v.tokens.size() - 3);  // <|endoftext|>
  v.eos_id = eot;
  v.pad_id = eot;
  return v;
}

// The contraction group as llama.cpp / fulgur spell it, and as tokenizer.json spells it.
constexpr std::string_view kContractionsExplicit =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
constexpr std::string_view kContractionsHf = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";

std::string hf_regex(std::string regex) {
  const size_t at = regex.find(kContractionsExplicit);
  if (at != std::string::npos) regex.replace(at, kContractionsExplicit.size(), kContractionsHf);
  return regex;
}

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", use_regex}};
}

TokenType type_of(const Vocab& v, size_t i) {
  return v.token_types.empty() ? TokenType::kNormal : v.token_types[i];
}

bool is_pad_filler(const Vocab& v, size_t i) {
  return type_of(v, i) == TokenType::kUnused && v.tokens[i] == cat("[PAD", i, "]");
}

bool is_added(TokenType t) { return t == TokenType::kControl || t == TokenType::kUserDefined; }

json added_token(const std::string& content, int64_t id, bool special) {
  return {{"id", id},           {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},    {"normalized", !special}, {"special", special}};
}

json token_or_null(const Vocab& v, int32_t id) {
  return id >= 0 ? json(v.tokens[static_cast<size_t>(id)]) : json(nullptr);
}

// JSON text must be UTF-8; a token that is not (possible in a GGUF-sourced vocab) is an Error
// naming the file being produced rather than a library exception.
std::string dump(const json& j, const char* what) {
  try {
    return j.dump(2, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception& e) {
    fail(what, ": cannot be written as JSON (a token is not valid UTF-8?): ", e.what());
  }
}

}  // namespace

Vocab builtin_byte_vocab() {
  static const Vocab vocab = make_builtin_vocab();  // training takes a few ms; do it once
  return vocab;
}

std::string builtin_chat_template() {
  return "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
         "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt "
         "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

std::string vocab_to_hf_json(const Vocab& v) {
  FULGUR_CHECK(v.model == "gpt2", "vocab_to_hf_json: tokenizer model is '", v.model,
               "'; only gpt2 (byte-level BPE) can be written as tokenizer.json");
  FULGUR_CHECK(v.token_types.empty() || v.token_types.size() == v.tokens.size(),
               "vocab_to_hf_json: token_types has ", v.token_types.size(), " entries, expected ",
               v.tokens.size());
  const PreTokenizerDef& pre = find_pre_tokenizer(v.pre);

  json vocab = json::object();
  json added = json::array();
  std::set<std::string> texts;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (is_pad_filler(v, i)) continue;  // vocab_from_hf_json recreates missing ids as fillers
    FULGUR_CHECK(texts.insert(v.tokens[i]).second, "vocab_to_hf_json: token text '", v.tokens[i],
                 "' appears twice (id ", i, "); tokenizer.json maps text to one id");
    const TokenType t = type_of(v, i);
    const auto id = static_cast<int64_t>(i);
    if (is_added(t)) {
      added.push_back(added_token(v.tokens[i], id, t == TokenType::kControl));
    } else {
      vocab[v.tokens[i]] = id;
    }
  }

  json pre_tokenizer;
  if (pre.name == "gpt2") {
    pre_tokenizer = byte_level(true);
  } else {
    json steps = json::array();
    for (const std::string& r : pre.regexes) {
      steps.push_back({{"type", "Split"},
                       {"pattern", {{"Regex", hf_regex(r)}}},
                       {"behavior", "Isolated"},
                       {"invert", false}});
    }
    steps.push_back(byte_level(false));
    pre_tokenizer = {{"type", "Sequence"}, {"pretokenizers", steps}};
  }

  json post_processor = byte_level(false);
  if (v.add_bos || v.add_eos) {  // the reader takes BOS/EOS from TemplateProcessing's "single"
    json single = json::array(), pair = json::array(), special = json::object();
    auto add_special = [&](int32_t id, const char* what) {
      FULGUR_CHECK(id >= 0 && static_cast<size_t>(id) < v.tokens.size(), "vocab_to_hf_json: add_",
                   what, " is set but ", what, "_id is ", id);
      const std::string& text = v.tokens[static_cast<size_t>(id)];
      special[text] = {{"id", text}, {"ids", {id}}, {"tokens", {text}}};
      return json{{"SpecialToken", {{"id", text}, {"type_id", 0}}}};
    };
    if (v.add_bos) single.push_back(add_special(v.bos_id, "bos"));
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (v.add_eos) single.push_back(add_special(v.eos_id, "eos"));
    for (const json& piece : single) pair.push_back(piece);
    pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
    post_processor = {{"type", "TemplateProcessing"},
                      {"single", single},
                      {"pair", pair},
                      {"special_tokens", special}};
  }

  json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", v.normalizer == Normalizer::kNfc ? json{{"type", "NFC"}} : json(nullptr)},
      {"pre_tokenizer", pre_tokenizer},
      {"post_processor", post_processor},
      {"decoder", byte_level(false)},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", v.ignore_merges},
        {"vocab", vocab},
        {"merges", v.merges}}},
  };
  return dump(root, "tokenizer.json");
}

std::string vocab_to_hf_tokenizer_config_json(const Vocab& v, const std::string& chat_template) {
  json decoder = json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const TokenType t = type_of(v, i);
    if (!is_added(t)) continue;
    json entry = added_token(v.tokens[i], static_cast<int64_t>(i), t == TokenType::kControl);
    entry.erase("id");
    decoder[std::to_string(i)] = entry;
  }
  json root = {
      {"add_bos_token", v.add_bos},
      {"add_eos_token", v.add_eos},
      {"add_prefix_space", false},
      {"added_tokens_decoder", decoder},
      {"bos_token", token_or_null(v, v.bos_id)},
      {"eos_token", token_or_null(v, v.eos_id)},
      {"pad_token", token_or_null(v, v.pad_id)},
      {"unk_token", token_or_null(v, v.unk_id)},
      {"clean_up_tokenization_spaces", false},
      {"errors", "replace"},
      {"split_special_tokens", false},
      {"tokenizer_class", v.pre == "qwen2" ? "Qwen2Tokenizer" : "PreTrainedTokenizerFast"},
  };
  if (!chat_template.empty()) root["chat_template"] = chat_template;
  return dump(root, "tokenizer_config.json");
}

}  // namespace fulgur
