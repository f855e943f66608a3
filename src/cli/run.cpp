// `fulgur run`: generate text from a prompt, streaming it, then report speed; with --spec / -md
// through speculative decoding (speculative/generator.h), reporting the drafters' statistics.
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/spec_options.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "jinja/chat_template.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "speculative/generator.h"
#include "tokenizer/token_bytes.h"
#include "tokenizer/stream_decoder.h"

namespace fulgur::cli {
namespace {

struct RunOptions {
  std::string model, prompt, prompt_file, prompt_ids;
  std::string grammar, grammar_file, json_schema;  // constrained output (at most one)
  int n_predict = 128;
  int threads = 0;
  int64_t n_ctx = 0;
  bool ignore_eos = false, chat = false, json = false;
  SamplerParams sampling;
  SpecCliOptions spec;
  ModelOptions load;
};

// The grammar of --grammar, --grammar-file or --json-schema (JSON text, or @FILE); nullptr when
// none is given. Compiled before the model loads, so a bad one fails fast.
std::shared_ptr<const Grammar> output_grammar(const RunOptions& o) {
  const int n = !o.grammar.empty() + !o.grammar_file.empty() + !o.json_schema.empty();
  FULGUR_CHECK(n <= 1, "give at most one of --grammar, --grammar-file and --json-schema");
  if (!o.grammar.empty()) return std::make_shared<Grammar>(parse_gbnf(o.grammar));
  if (!o.grammar_file.empty()) return std::make_shared<Grammar>(parse_gbnf(read_text_file(o.grammar_file)));
  if (o.json_schema.empty()) return nullptr;
  const std::string text = o.json_schema[0] == '@' ? read_text_file(o.json_schema.substr(1)) : o.json_schema;
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("--json-schema: not valid JSON: ", e.what());
  }
  return std::make_shared<Grammar>(json_schema_grammar(schema));
}

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
  check_spec_options(o.spec);  // bad --spec combinations fail before anything is loaded
  LoadedModel lm = load_model(o.model, false, o.load);
  const Model& m = *lm.model;
  const std::vector<int32_t> prompt = prompt_tokens(o, lm);
  // One sequence: recurrent state and a sliding-window cache are sized for it.
  Context ctx(m, {.n_ctx = o.n_ctx, .n_batch = 512, .n_threads = o.threads, .n_seq_max = 1});
  FULGUR_CHECK(static_cast<int64_t>(prompt.size()) + o.n_predict <= ctx.n_ctx(), "the prompt (",
               prompt.size(), " tokens) plus -n ", o.n_predict, " exceeds the context of ", ctx.n_ctx(),
               " tokens (raise -c)");
  SpecSetup spec = make_spec_setup(o.spec, m, ctx, o.load);
  GeneratorParams gp;
  gp.sampling = o.sampling;
  gp.spec = spec_params(o.spec, o.model, ctx, spec);
  if (!o.ignore_eos && lm.tokenizer) {
    const Tokenizer* tok = lm.tokenizer.get();
    gp.is_eog = [tok](int32_t id) { return tok->is_eog(id); };
  }
  Generator gen(ctx, gp, spec.drafters);
  std::unique_ptr<StreamDecoder> stream;
  if (lm.tokenizer) stream = std::make_unique<StreamDecoder>(*lm.tokenizer);

  std::string text, piece;
  gen.on_tokens = [&](int, std::span<const int32_t> tokens) {
    if (!stream) return;
    for (int32_t tok : tokens) {
      piece.clear();
      stream->push(tok, piece);
      text += piece;
      if (!o.json) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      }
    }
  };
  SeqOptions so;
  so.grammar = output_grammar(o);
  if (so.grammar) {
    FULGUR_CHECK(lm.tokenizer != nullptr, "--grammar / --json-schema: the model has no tokenizer");
    gen.set_token_vocab(std::make_shared<TokenVocab>(token_bytes(*lm.tokenizer, m.n_vocab()),
                                                     eog_ids(*lm.tokenizer, m.n_vocab())));
  }
  gen.start(0, prompt, o.n_predict, so);
  const double t0 = now_seconds();
  gen.run();
  const double t_total = now_seconds() - t0;
  const GenerationStats& st = gen.stats();
  const std::vector<int32_t>& generated = gen.output(0);
  if (stream) {
    piece = stream->flush();
    text += piece;
    if (!o.json) std::fputs(piece.c_str(), stdout);
  }
  // The prefill decodes all prompt tokens but the last; that one is decoded with the first
  // draft, so every generated token (the first included) belongs to the decode phase.
  const double t_prefill = st.t_prefill;
  const double t_decode = t_total - t_prefill;
  const double prefill_tps = prompt.size() > 1 ? (prompt.size() - 1) / t_prefill : 0.0;
  const double decode_tps = t_decode > 0 ? static_cast<double>(generated.size()) / t_decode : 0.0;
  const double gbps = static_cast<double>(st.decodes) / t_decode * static_cast<double>(m.bytes_per_token()) / 1e9;
  const bool speculative = !spec.drafters.empty();
  if (o.json) {
    nlohmann::json j;
    j["tokens"] = generated;
    j["text"] = text;
    j["prompt_tokens"] = prompt.size();
    // The KV memory this run's context holds for its -c cells (a sliding-window layer's only for
    // its window and a batch), as llama.cpp logs its "llama_kv_cache: size".
    j["n_ctx"] = ctx.n_ctx();
    j["kv_mib"] = static_cast<double>(ctx.kv_bytes()) / (1 << 20);
    j["timings"] = {{"load_s", lm.load_seconds + spec.load_seconds}, {"prefill_s", t_prefill}, {"decode_s", t_decode},
                    {"prefill_tok_s", prefill_tps}, {"decode_tok_s", decode_tps}, {"decode_gb_s", gbps}};
    if (speculative) j["spec"] = spec_stats_json(st);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fprintf(stderr,
                 "\n\nprompt: %zu tokens | prefill %.1f tok/s | decode %.2f tok/s (%zu tokens) | "
                 "%.1f GB/s of weights | load %.2f s\n",
                 prompt.size(), prefill_tps, decode_tps, generated.size(), gbps, lm.load_seconds + spec.load_seconds);
    if (speculative) {
      const DrafterStats total = st.total();
      std::fprintf(stderr,
                   "speculative: %lld target decodes for %lld tokens | draft acceptance = %.5f (%lld accepted / "
                   "%lld generated), mean acceptance length = %.2f | draft %.1f ms, verify %.1f ms, commit %.1f ms\n",
                   static_cast<long long>(st.decodes), static_cast<long long>(st.generated),
                   total.acceptance_rate(), static_cast<long long>(total.accepted),
                   static_cast<long long>(total.drafted), total.mean_accepted_length(), st.t_draft * 1e3,
                   st.t_verify * 1e3, st.t_commit * 1e3);
      for (const DrafterStats& d : st.drafters) std::fprintf(stderr, "%s\n", format_drafter_stats(d).c_str());
    }
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
  add_model_options(cmd, o->load);
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template as a user turn");
  cmd->add_flag("--json", o->json, "print one JSON object (tokens, text, timings) instead of streaming");
  cmd->add_option("--grammar", o->grammar, "constrain the output to this GBNF grammar (llama.cpp's format; start rule 'root')");
  cmd->add_option("--grammar-file", o->grammar_file, "constrain the output to the GBNF grammar in this file");
  cmd->add_option("-j,--json-schema", o->json_schema,
                  "constrain the output to JSON valid against this schema (JSON text, or @FILE)");
  add_sampling_options(cmd, o->sampling);
  add_spec_options(cmd, o->spec);
  cmd->callback([o, &exit_code] {
    validate(o->sampling);
    output_grammar(*o);  // a bad grammar or schema fails before the model loads
    FULGUR_CHECK(o->n_predict >= 1, "-n must be at least 1");
    exit_code = run(*o);
  });
}

}  // namespace fulgur::cli
