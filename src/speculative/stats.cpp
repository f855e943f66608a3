#include "speculative/stats.h"

#include <algorithm>
#include <cstdio>

namespace fulgur {

double DrafterStats::acceptance_rate() const {
  return drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0;
}

double DrafterStats::mean_accepted_length() const {
  return drafts > 0 ? 1.0 + static_cast<double>(accepted) / static_cast<double>(drafts) : 0.0;
}

std::vector<double> DrafterStats::acceptance_per_position() const {
  std::vector<double> out(drafted_at.size(), 0.0);
  for (size_t i = 0; i < out.size(); ++i) {
    if (drafted_at[i] > 0) out[i] = static_cast<double>(accepted_at[i]) / static_cast<double>(drafted_at[i]);
  }
  return out;
}

void DrafterStats::add_verify(int n_drafted, int n_accepted) {
  ++drafts;
  if (n_accepted > 0) ++drafts_accepted;
  drafted += n_drafted;
  accepted += n_accepted;
  if (drafted_at.size() < static_cast<size_t>(n_drafted)) {
    // Grows only when a longer draft than ever before appears (at most n_max times).
    drafted_at.resize(static_cast<size_t>(n_drafted), 0);
    accepted_at.resize(static_cast<size_t>(n_drafted), 0);
  }
  for (int i = 0; i < n_drafted; ++i) ++drafted_at[static_cast<size_t>(i)];
  for (int i = 0; i < n_accepted; ++i) ++accepted_at[static_cast<size_t>(i)];
}

void DrafterStats::merge(const DrafterStats& o) {
  drafts += o.drafts;
  drafts_accepted += o.drafts_accepted;
  drafted += o.drafted;
  accepted += o.accepted;
  const size_t n = std::max(drafted_at.size(), o.drafted_at.size());
  drafted_at.resize(n, 0);
  accepted_at.resize(n, 0);
  for (size_t i = 0; i < o.drafted_at.size(); ++i) {
    drafted_at[i] += o.drafted_at[i];
    accepted_at[i] += o.accepted_at[i];
  }
  t_draft += o.t_draft;
  t_commit += o.t_commit;
}

DrafterStats GenerationStats::total() const {
  DrafterStats t;
  t.name = "total";
  for (const DrafterStats& d : drafters) t.merge(d);
  return t;
}

std::string format_drafter_stats(const DrafterStats& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "statistics %s: #gen drafts = %lld, #acc drafts = %lld, #gen tokens = %lld, "
                "#acc tokens = %lld, acceptance = %.3f, mean acc len = %.2f, #acc rate/pos = (",
                s.name.c_str(), static_cast<long long>(s.drafts),
                static_cast<long long>(s.drafts_accepted), static_cast<long long>(s.drafted),
                static_cast<long long>(s.accepted), s.acceptance_rate(), s.mean_accepted_length());
  std::string out = buf;
  const std::vector<double> per = s.acceptance_per_position();
  for (size_t i = 0; i < per.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.3f", i ? ", " : "", per[i]);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "), dur(draft, commit) = %.1f, %.1f ms", s.t_draft * 1e3,
                s.t_commit * 1e3);
  return out + buf;
}

}  // namespace fulgur
