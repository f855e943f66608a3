#include "llama/llama_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fulgur::test {
namespace {

std::string describe_top(const std::vector<std::pair<int32_t, float>>& top) {
  std::string s;
  for (const auto& [id, v] : top) {
    s += ' ';
    s += std::to_string(id);
    s += ':';
    s += std::to_string(v);
  }
  return s;
}

// Top-2 margin of one step's top-k (best minus second-best logit).
double margin(const std::vector<std::pair<int32_t, float>>& top) {
  return top.size() >= 2 ? static_cast<double>(top[0].second) - top[1].second : INFINITY;
}

}  // namespace

LogitStats compare_logits(const std::vector<float>& a, const std::vector<float>& b) {
  LogitStats s;
  const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
  s.spread = *hi - *lo;
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= s.max_abs)) {  // also catches NaN
      s.max_abs = std::isnan(d) ? INFINITY : d;
      s.worst = static_cast<int64_t>(i);
    }
    sq += d * d;
  }
  s.rms = std::sqrt(sq / std::max<size_t>(1, a.size()));
  return s;
}

void check_model(const std::string& label, const std::string& model, const std::vector<int32_t>& prompt,
                 const Tolerance& tol, const std::string& dir, bool self_check, int max_flips) {
  SCOPED_TRACE(label);
  const std::vector<int32_t> cli = fulgur_run_cli(model, prompt, kSteps, dir);
  const GreedyRun ours = fulgur_greedy(model, prompt, kSteps, kTopK);
  // The CLI and the in-process loop are the same engine; a difference here is a CLI bug.
  EXPECT_EQ(cli, ours.tokens);
  const GreedyRun ref = llama_greedy(model, prompt, kSteps, kTopK, dir, "--force-ids " + join_ids(ours.tokens));
  ASSERT_EQ(ref.tokens.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(ours.logits.size(), ref.logits.size()) << "n_vocab differs";

  const LogitStats s = compare_logits(ours.logits, ref.logits);
  std::printf("[%s] last-position logits, fulgur vs llama.cpp: max |diff| %.3g (%.3g of spread %.3g, worst id "
              "%lld), rms %.3g (%.3g)\n",
              label.c_str(), s.max_abs, s.max_abs / s.spread, s.spread, static_cast<long long>(s.worst), s.rms,
              s.rms / s.spread);
  if (self_check) {
    const GreedyRun alt = llama_greedy(model, prompt, 1, kTopK, dir, "--flash-attention off");
    ASSERT_EQ(alt.logits.size(), ref.logits.size());
    const LogitStats self = compare_logits(alt.logits, ref.logits);
    std::printf("[%s] llama.cpp flash-attention on vs off: max %.3g (%.3g), rms %.3g (%.3g)\n", label.c_str(),
                self.max_abs, self.max_abs / self.spread, self.rms, self.rms / self.spread);
  }
  EXPECT_LE(s.max_abs, tol.max_abs_rel * s.spread) << "worst id " << s.worst << ": fulgur "
                                                   << ours.logits[s.worst] << " llama " << ref.logits[s.worst];
  EXPECT_LE(s.rms, tol.rms_rel * s.spread);

  const double bound = tol.max_abs_rel * s.spread;
  double worst_step_diff = 0.0, min_margin = INFINITY;
  int same = 0;
  std::string near_ties;
  for (int j = 0; j < kSteps; ++j) {
    const auto& mine = ours.top[j];
    const auto& theirs = ref.top[j];
    for (const auto& [id, v] : theirs) {
      for (const auto& [id2, v2] : mine) {
        if (id2 == id) worst_step_diff = std::max(worst_step_diff, std::fabs(static_cast<double>(v) - v2));
      }
    }
    min_margin = std::min(min_margin, margin(theirs));
    if (ref.tokens[j] == ours.tokens[j]) {
      ++same;
      continue;
    }
    const std::string at = "step " + std::to_string(j) + ": fulgur top" + describe_top(mine) + "; llama top" +
                           describe_top(theirs);
    if (margin(theirs) < bound) {
      near_ties += "\n  " + at;
    } else {
      ADD_FAILURE() << "greedy choice differs at " << at << " (llama.cpp's margin " << margin(theirs)
                    << " is above the logit bound " << bound << ")";
    }
  }
  EXPECT_LE(worst_step_diff, bound) << "top-" << kTopK << " logits of some step differ by more than the bound";
  std::printf("[%s] greedy: %d/%d steps choose the same token; top-%d logits differ by at most %.3g over the steps "
              "(bound %.3g); smallest llama.cpp top-2 margin %.3g%s%s\n",
              label.c_str(), same, kSteps, kTopK, worst_step_diff, bound, min_margin,
              near_ties.empty() ? "" : "; allowed near-tie flips:", near_ties.c_str());
  EXPECT_GE(same, kSteps - max_flips) << "more than " << max_flips << " near-tie flips";
}


}  // namespace fulgur::test
