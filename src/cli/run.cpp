// `fulgur run`: generate text from a prompt, streaming it, then report speed.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "cli/command.h"
#include "cli/session.h"
#include "core/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "tokenizer/stream_decoder.h"

namespace fulgur::cli {
namespace {

struct RunOptions {
  std::string model, prompt, prompt_file, prompt_ids;
  int n_predict = 128;
  int threads = 0;
  int64_t n_ctx = 0;
  bool ignore_eos = false, chat = false, json = false;
  SamplerParams sampling;
};

std::vector<int32_t> prompt_tokens(const RunOptions& o, const LoadedModel& lm) {
  const int n_sources = !o.prompt.empty() + !o.prompt_file.empty() + !o.prompt_ids.empty();
  FULGUR_CHECK(n_sources == 1, "give exactly one of -p, -f or --prompt-ids");
  if (!o.prompt_ids.empty()) return parse_id_list(o.prompt_ids);
  FULGUR_CHECK(lm.tokenizer != nullptr, "the model has no tokenizer; use --prompt-ids");
  std::string text = !o.prompt.empty() ? o.prompt : read_text_file(o.prompt_file);
  if (o.chat) {
    const std::string source = lm.model->gguf().get_string("tokenizer.chat_template", "");
    FULGUR_CHECK(!source.empty(), "--chat: the model has no tokenizer.chat_template");
    nlohmann::json ctx;
    ctx["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
    ctx["add_generation_prompt"] = true;
    text = ChatTemplate(source).render(ctx);
  }
  std::vector<int32_t> ids = lm.tokenizer->encode(text, /*parse_special=*/o.chat, /*add_special=*/true);
  FULGUR_CHECK(!ids.empty(), "the prompt is empty");
  return ids;
}

int run(const RunOptions& o) {
  LoadedModel lm = load_model(o.model, false);
  const Model& m = *lm.model;
  const std::vector<int32_t> prompt = prompt_tokens(o, lm);
  Context ctx(m, {.n_ctx = o.n_ctx, .n_batch = 512, .n_threads = o.threads});
  FULGUR_CHECK(static_cast<int64_t>(prompt.size()) + o.n_predict <= ctx.n_ctx(), "the prompt (",
               prompt.size(), " tokens) plus -n ", o.n_predict, " exceeds the context of ", ctx.n_ctx(),
               " tokens (raise -c)");
  Sampler sampler(o.sampling, static_cast<int>(m.n_vocab()));
  Rng rng(o.sampling.seed);
  std::unique_ptr<StreamDecoder> stream;
  if (lm.tokenizer) stream = std::make_unique<StreamDecoder>(*lm.tokenizer);

  std::vector<int32_t> history = prompt, generated;
  std::string text, piece;
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  const double t0 = now_seconds();
  ctx.decode(batch);
  const double t_prefill = now_seconds() - t0;
  int64_t row = batch.size() - 1;
  const double t1 = now_seconds();
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t tok = sampler.sample(ctx.logits(row), history, rng);
    generated.push_back(tok);
    history.push_back(tok);
    if (stream) {
      piece.clear();
      stream->push(tok, piece);
      text += piece;
      if (!o.json) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      }
    }
    if (!o.ignore_eos && lm.tokenizer && lm.tokenizer->is_eog(tok)) break;
    if (i + 1 == o.n_predict) break;
    batch.clear();
    batch.add(tok, static_cast<int32_t>(history.size() - 1), 0, true);
    ctx.decode(batch);
    row = 0;
  }
  const double t_decode = now_seconds() - t1;
  if (stream) {
    piece = stream->flush();
    text += piece;
    if (!o.json) std::fputs(piece.c_str(), stdout);
  }
  // The first token comes from the prefill's logits; the decode phase ran n - 1 forwards.
  const double decoded = std::max<double>(1, static_cast<double>(generated.size()) - 1);
  const double prefill_tps = prompt.size() / t_prefill;
  const double decode_tps = generated.size() > 1 ? decoded / t_decode : 0.0;
  const double gbps = decode_tps * static_cast<double>(m.bytes_per_token()) / 1e9;
  if (o.json) {
    nlohmann::json j;
    j["tokens"] = generated;
    j["text"] = text;
    j["prompt_tokens"] = prompt.size();
    j["timings"] = {{"load_s", lm.load_seconds}, {"prefill_s", t_prefill}, {"decode_s", t_decode},
                    {"prefill_tok_s", prefill_tps}, {"decode_tok_s", decode_tps}, {"decode_gb_s", gbps}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fprintf(stderr,
                 "\n\nprompt: %zu tokens | prefill %.1f tok/s | decode %.2f tok/s (%zu tokens) | "
                 "%.1f GB/s of weights | load %.2f s\n",
                 prompt.size(), prefill_tps, decode_tps, generated.size(), gbps, lm.load_seconds);
  }
  return 0;
}

}  // namespace

void add_sampling_options(CLI::App* cmd, SamplerParams& s) {
  cmd->add_option("--temp", s.temperature, "temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens; 0 = off")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "nucleus sampling threshold; 1 = off")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "drop tokens below min-p x the top probability; 0 = off")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "penalise repeated tokens; 1 = off")->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalties look back over")->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "subtracted once per seen token")->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "subtracted per occurrence")->capture_default_str();
  cmd->add_option("-s,--seed", s.seed, "random seed")->capture_default_str();
}

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-p,--prompt", o->prompt, "prompt text");
  cmd->add_option("-f,--file", o->prompt_file, "read the prompt from a file");
  cmd->add_option("--prompt-ids", o->prompt_ids, "prompt as comma-separated token ids");
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->n_ctx, "context size in tokens; 0 = min(training, 4096)")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "threads; 0 = physical cores")->capture_default_str();
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template as a user turn");
  cmd->add_flag("--json", o->json, "print one JSON object (tokens, text, timings) instead of streaming");
  add_sampling_options(cmd, o->sampling);
  cmd->callback([o, &exit_code] {
    validate(o->sampling);
    FULGUR_CHECK(o->n_predict >= 1, "-n must be at least 1");
    exit_code = run(*o);
  });
}

}  // namespace fulgur::cli
