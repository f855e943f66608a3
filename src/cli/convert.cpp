// `fulgur convert HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_k|q6_k] [--no-progress]
// [--mtp | --no-mtp] [--target T]`:
// converts a Hugging Face checkpoint folder to GGUF (convert/convert_model.h); a draft takes its
// target's vocabulary from --target. The default type is f16, like llama.cpp's
// convert_hf_to_gguf.py --outtype. Errors propagate to main, which prints
// "fulgur: error: <message>" and exits with status 1.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "convert/convert_model.h"
#include "convert/quant_policy.h"

namespace fulgur::cli {

void add_convert_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string in_dir, out_path, type = "f16", target;
    bool no_progress = false, mtp = false, no_mtp = false;
    int threads = 0;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "convert a Hugging Face checkpoint folder (" + supported_hf_architectures() +
                     ") to GGUF");
  cmd->add_option("hf_dir", opt->in_dir, "folder with config.json, *.safetensors, tokenizer.json")
      ->required();
  cmd->add_option("-o,--output", opt->out_path, "GGUF file to write")->required();
  cmd->add_option("--type", opt->type,
                  "f32|f16|bf16|q8_0|q4_0|q4_k|q6_k; 1-D tensors stay f32, rows that do not fit "
                  "a block fall back (q4_k/q6_k -> q8_0 -> f16); q4_k puts q6_k on token_embd "
                  "and output. A checkpoint's NVFP4 linears stay NVFP4; its MXFP4 weights (gpt-oss's "
                  "released experts) stay MXFP4 under f32/f16/bf16 and are requantized to a quantized type")
      ->capture_default_str();
  cmd->add_option("--target,--target-model-dir", opt->target,
                  "drafts: the target model (GGUF file or HF folder) whose vocabulary goes into "
                  "the draft, so llama.cpp can load it; its shape is checked against the draft's");
  cmd->add_flag("--no-progress", opt->no_progress, "no progress bar on stderr (there is none when it is not a terminal)");
  cmd->add_option("-t,--threads", opt->threads, "threads converting rows (0 = one per physical core)")
      ->capture_default_str();
  auto* mtp = cmd->add_flag("--mtp", opt->mtp,
                            "include the checkpoint's MTP block (the default when it has one); "
                            "an error when the architecture or the checkpoint has none");
  cmd->add_flag("--no-mtp", opt->no_mtp, "leave the checkpoint's MTP block out")->excludes(mtp);
  cmd->callback([opt, &exit_code] {
    ConvertOptions options;
    options.in_dir = opt->in_dir;
    options.out_path = opt->out_path;
    options.target = opt->target;
    options.type = parse_convert_type(opt->type);
    // A bar redrawn in place on a terminal; nothing per tensor into a log or a pipe.
    options.progress = !opt->no_progress && isatty(STDERR_FILENO);
    options.threads = opt->threads;
    options.mtp = opt->mtp ? MtpMode::kInclude : opt->no_mtp ? MtpMode::kExclude : MtpMode::kAuto;
    convert_hf_to_gguf(options);
    std::fprintf(stderr, "convert: wrote %s (%s)\n", options.out_path.c_str(),
                 std::string(convert_type_name(options.type)).c_str());
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
