#include "convert/hf_vocab.h"

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "cannot open '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

LoadedVocab load_hf_vocab(const fs::path& dir, const HfConfig& cfg, int64_t n_vocab,
                          SpmGgufModel spm_as) {
  const fs::path tok = dir / "tokenizer.json";
  FULGUR_CHECK(fs::exists(tok), dir.string(),
               ": no tokenizer.json (fulgur converts byte-level BPE and SentencePiece-style ",
               "tokenizers from it)");
  LoadedVocab out;
  out.vocab = load_hf_tokenizer(tok.string(), spm_as);
  const fs::path tok_cfg = dir / "tokenizer_config.json";
  if (fs::exists(tok_cfg)) {
    const HfTokenizerConfig tc = load_hf_tokenizer_config(tok_cfg.string());
    apply_hf_config(out.vocab, tc);
    out.chat_template = tc.chat_template;
    out.named_templates = tc.named_chat_templates;
  }
  const fs::path jinja = dir / "chat_template.jinja";
  if (out.chat_template.empty() && fs::exists(jinja)) out.chat_template = read_text(jinja);

  FULGUR_CHECK(static_cast<int64_t>(out.vocab.tokens.size()) <= n_vocab, tok.string(), ": has ",
               out.vocab.tokens.size(), " tokens but the embedding has only ", n_vocab,
               " rows (", cfg.source(), " vocab_size)");
  pad_vocab(out.vocab, static_cast<size_t>(n_vocab));
  for (auto [key, field] : {std::pair{"bos_token_id", &Vocab::bos_id},
                            std::pair{"eos_token_id", &Vocab::eos_id},
                            std::pair{"pad_token_id", &Vocab::pad_id}}) {
    if (out.vocab.*field >= 0 || !cfg.has(key)) continue;
    const std::vector<int64_t> ids = cfg.get_int_or_int_array(key);
    if (!ids.empty() && ids[0] >= 0 && ids[0] < n_vocab) {
      out.vocab.*field = static_cast<int32_t>(ids[0]);
    }
  }
  return out;
}

void write_loaded_vocab(GgufWriter& w, const LoadedVocab& v) {
  write_vocab(w, v.vocab, v.chat_template);
  for (const auto& [name, text] : v.named_templates) {
    w.set_string("tokenizer.chat_template." + name, text);
  }
}

}  // namespace fulgur
