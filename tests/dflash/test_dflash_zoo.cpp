// Measurements on the trained zoo pair (../shared/zoo: a small Qwen3 target and its DeepSpec
// DSpark draft). Opt-in, because they take a while: set FULGUR_ZOO to the zoo folder and
// FULGUR_ZOO_HELDOUT to a file listing the held-out Python files, one path per line (the files
// under /usr/lib/python3.11 whose int(sha1(relpath), 16) % 20 == 0, see the zoo README).
//  * TeacherForced: per-slot top-1 agreement of the draft (Markov chain fed the data tokens)
//    with the target's argmax; the zoo README reports 0.65 0.57 0.56 0.53 0.53 0.50 0.49, and a
//    layout or tap mistake shows up as a collapse.
//  * Generation: greedy output with the draft equals greedy output without it; mean accepted
//    length and speedup for several --spec-n-max / --spec-p-min, at T = 0 and T = 0.7.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dflash/dflash_fixture.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::dflash_test {
namespace {

struct Zoo {
  std::string target, draft;  // converted GGUFs
  std::unique_ptr<Model> model;
  std::vector<std::vector<int32_t>> files;  // tokenized held-out files
};

Zoo* zoo() {
  static Zoo* z = []() -> Zoo* {
    const char* dir = std::getenv("FULGUR_ZOO");
    const char* list = std::getenv("FULGUR_ZOO_HELDOUT");
    if (dir == nullptr || list == nullptr) return nullptr;
    auto* out = new Zoo;
    ConvertOptions c;
    c.progress = false;
    c.type = DType::kF32;
    c.in_dir = std::string(dir) + "/zoo-qwen3-code";
    c.out_path = env().dir + "/zoo_target.gguf";
    convert_hf_to_gguf(c);
    out->target = c.out_path;
    c.in_dir = std::string(dir) + "/zoo-dspark";
    c.out_path = env().dir + "/zoo_dspark.gguf";
    convert_hf_to_gguf(c);
    out->draft = c.out_path;
    out->model = std::make_unique<Model>(out->target);
    const Tokenizer tok(read_vocab(out->model->gguf()));
    std::ifstream in(list);
    std::string path;
    while (std::getline(in, path)) {
      if (path.empty()) continue;
      std::ifstream f(path, std::ios::binary);
      std::stringstream text;
      text << f.rdbuf();
      out->files.push_back(tok.encode(text.str(), false));
    }
    return out;
  }();
  return z;
}

TEST(DflashZoo, TeacherForcedAgreement) {
  Zoo* z = zoo();
  if (z == nullptr) GTEST_SKIP() << "set FULGUR_ZOO and FULGUR_ZOO_HELDOUT";
  DflashDrafter d(z->draft, *z->model, {});
  ASSERT_EQ(d.name(), "dspark");
  ASSERT_EQ(d.required_taps(), (std::vector<int>{2, 4, 5}));
  const int64_t B = d.block_drafts(), V = z->model->n_vocab(), kWindow = 256;
  std::vector<int64_t> hits(B, 0), conf_n(B, 0);
  std::vector<double> conf_sum(B, 0.0);
  int64_t blocks = 0;
  // 48 windows spread evenly over the held-out stream (files joined by <|endoftext|>, as the
  // zoo's training and evaluation read them).
  std::vector<int32_t> stream;
  for (const std::vector<int32_t>& f : z->files) {
    stream.insert(stream.end(), f.begin(), f.end());
    stream.push_back(4092);
  }
  const int64_t kWindows = 48;
  for (int64_t w = 0; w < kWindows; ++w) {
    const int64_t off = w * (static_cast<int64_t>(stream.size()) - kWindow) / (kWindows - 1);
    const std::span<const int32_t> toks(stream.data() + off, kWindow);
    Context ctx(*z->model, {.n_ctx = 512, .n_batch = 256, .n_threads = 1});
    ctx.set_taps(d.required_taps());
    Batch b;
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < kWindow; ++i) {
      b.add(toks[i], static_cast<int32_t>(i), 0, true);
      rows.push_back(i);
    }
    ctx.decode(b);
    std::vector<int32_t> target_top(kWindow);  // argmax of the target after row i
    for (int64_t i = 0; i < kWindow; ++i) {
      const float* l = ctx.logits(i);
      target_top[i] = static_cast<int32_t>(std::max_element(l, l + V) - l);
    }
    d.reset(0);
    d.commit(0, std::span(toks.data(), kWindow), 0, ctx, rows);
    // Anchors from the end: each block drops positions >= its anchor from the draft cache,
    // which leaves exactly the context the next (earlier) anchor should see.
    std::vector<int32_t> top1;
    std::vector<float> conf;
    for (int64_t s = kWindow - B - 1; s >= 1; s -= 7) {
      d.score_block(0, toks[s], static_cast<int32_t>(s), std::span(toks.data() + s + 1, B - 1), top1, conf);
      for (int64_t k = 0; k < B; ++k) {
        hits[k] += top1[k] == target_top[s + k];
        conf_sum[k] += conf[k];
        ++conf_n[k];
      }
      ++blocks;
    }
  }
  std::printf("teacher-forced over %lld blocks: top-1 agreement per slot:", static_cast<long long>(blocks));
  for (int64_t k = 0; k < B; ++k) std::printf(" %.3f", static_cast<double>(hits[k]) / blocks);
  std::printf("\n  mean confidence per slot:");
  for (int64_t k = 0; k < B; ++k) std::printf(" %.3f", conf_sum[k] / conf_n[k]);
  std::printf("\n");
  ASSERT_GT(blocks, 100);
  EXPECT_NEAR(static_cast<double>(hits[0]) / blocks, 0.65, 0.08);
  EXPECT_NEAR(static_cast<double>(hits[B - 1]) / blocks, 0.49, 0.10);
}

struct RunResult {
  std::vector<std::vector<int32_t>> out;
  double seconds = 0.0, mean_len = 0.0;
  int64_t generated = 0;
};

RunResult run_prompts(Drafter* d, float temperature, float p_min, int n_prompts, int n_predict) {
  Zoo* z = zoo();
  Context ctx(*z->model, {.n_ctx = 512, .n_batch = 256, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling.temperature = temperature;
  gp.spec.p_min = p_min;
  gp.spec.adaptive = false;  // acceptance at the given n-max
  std::vector<Drafter*> ds;
  if (d != nullptr) ds.push_back(d);
  Generator g(ctx, gp, ds);
  RunResult r;
  int done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::vector<int32_t>& toks : z->files) {
    if (done == n_prompts) break;
    if (toks.size() < 200) continue;
    g.start(0, std::vector<int32_t>(toks.begin(), toks.begin() + 64), n_predict, 42 + done);
    g.run();
    r.out.push_back(g.output(0));
    ++done;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.generated = g.stats().generated;
  if (d != nullptr) r.mean_len = g.stats().total().mean_accepted_length();
  return r;
}

TEST(DflashZoo, GenerationAcceptanceAndSpeed) {
  Zoo* z = zoo();
  if (z == nullptr) GTEST_SKIP() << "set FULGUR_ZOO and FULGUR_ZOO_HELDOUT";
  const int kPrompts = 12, kPredict = 128;
  for (float temperature : {0.0f, 0.7f}) {
    const RunResult plain = run_prompts(nullptr, temperature, 0.0f, kPrompts, kPredict);
    std::printf("T=%.1f plain: %.1f tok/s\n", temperature, plain.generated / plain.seconds);
    struct Cfg { int n_max; float p_min; };
    for (const Cfg cfg : {Cfg{3, 0.0f}, Cfg{5, 0.0f}, Cfg{7, 0.0f}, Cfg{7, 0.3f}, Cfg{7, 0.5f}}) {
      DflashDrafter d(z->draft, *z->model, {.n_ctx = 512, .n_threads = 1, .n_max = cfg.n_max});
      const RunResult r = run_prompts(&d, temperature, cfg.p_min, kPrompts, kPredict);
      std::printf("T=%.1f n_max %d p_min %.1f: mean accepted length %.3f, %.1f tok/s, speedup %.2fx\n",
                  temperature, cfg.n_max, cfg.p_min, r.mean_len, r.generated / r.seconds,
                  plain.seconds / r.seconds * r.generated / plain.generated);
      if (temperature == 0.0f) {
        EXPECT_EQ(r.out, plain.out) << "n_max " << cfg.n_max;
      }
      if (temperature == 0.0f && cfg.n_max == 7 && cfg.p_min == 0.0f) {
        EXPECT_GT(r.mean_len, 2.0);
      }
    }
  }
}

}  // namespace
}  // namespace fulgur::dflash_test
