// `fulgur tokenize`: print a text's token ids (like llama-tokenize).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/session.h"
#include "core/error.h"

namespace fulgur::cli {

void add_tokenize_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model, prompt, file;
    bool special = false, json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("-m,--model", o->model, "GGUF model (its tokenizer is used)")->required();
  cmd->add_option("-p,--prompt", o->prompt, "text");
  cmd->add_option("-f,--file", o->file, "read the text from a file");
  cmd->add_flag("--special", o->special, "parse special-token texts such as <|im_start|> as tokens");
  cmd->add_flag("--json", o->json, "print {\"ids\": [...]}");
  cmd->callback([o, &exit_code] {
    FULGUR_CHECK(o->prompt.empty() != o->file.empty(), "give exactly one of -p or -f");
    const LoadedModel lm = load_model(o->model, true, {.pack = false});  // no forward: no repacking
    const std::string text = o->file.empty() ? o->prompt : read_text_file(o->file);
    const std::vector<int32_t> ids = lm.tokenizer->encode(text, o->special, /*add_special=*/true);
    if (o->json) {
      std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
    } else {
      for (int32_t id : ids) {
        std::printf("%6d -> '%s'\n", id, lm.tokenizer->token_piece(id, true).c_str());
      }
    }
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
