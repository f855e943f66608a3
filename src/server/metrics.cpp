#include "server/metrics.h"

#include <malloc.h>

#include <cstdio>

namespace fulgur::server {
namespace {

class Writer {
 public:
  // One metric family: its HELP and TYPE lines.
  void family(const char* name, const char* type, const char* help) {
    out_ += cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  void sample(const std::string& name_and_labels, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += name_and_labels + " " + buf + "\n";
  }
  // A family of one unlabelled sample.
  void single(const char* name, const char* type, const char* help, double v) {
    family(name, type, help);
    sample(name, v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Label values: Prometheus escapes backslash, double quote and newline.
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

std::string format_metrics(const EngineMetrics& m, int64_t bad_requests) {
  Writer w;
  w.family("fulgur_requests_total", "counter", "Requests by outcome: finished, cancelled (client gone), failed, rejected (503: queue full), bad (4xx).");
  w.sample("fulgur_requests_total{outcome=\"finished\"}", static_cast<double>(m.requests_done));
  w.sample("fulgur_requests_total{outcome=\"cancelled\"}", static_cast<double>(m.requests_cancelled));
  w.sample("fulgur_requests_total{outcome=\"failed\"}", static_cast<double>(m.requests_failed));
  w.sample("fulgur_requests_total{outcome=\"rejected\"}", static_cast<double>(m.requests_rejected));
  w.sample("fulgur_requests_total{outcome=\"bad\"}", static_cast<double>(bad_requests));
  w.single("fulgur_prompt_tokens_total", "counter", "Prompt tokens of finished requests (reused ones included).",
           static_cast<double>(m.prompt_tokens));
  w.single("fulgur_prompt_tokens_reused_total", "counter", "Prompt tokens whose KV came from a slot's prompt cache.",
           static_cast<double>(m.reused_tokens));
  w.single("fulgur_prompt_cache_bytes", "gauge", "Bytes the host-memory prompt cache (--cache-ram) holds.",
           static_cast<double>(m.cache_bytes));
  w.single("fulgur_prompt_cache_entries", "gauge", "Prompts whose memory the host-memory prompt cache holds.",
           static_cast<double>(m.cache_entries));
  w.single("fulgur_prompt_cache_saves_total", "counter", "Slot memories kept in the host-memory prompt cache.",
           static_cast<double>(m.cache_saves));
  w.single("fulgur_prompt_cache_loads_total", "counter", "Cached prompt memories copied back into a slot instead of a prefill.",
           static_cast<double>(m.cache_loads));
  w.single("fulgur_generated_tokens_total", "counter", "Tokens generated for finished requests.",
           static_cast<double>(m.generated_tokens));
  w.single("fulgur_tokens_per_second", "gauge", "Tokens emitted per second while at least one slot was busy, since start.",
           m.busy_seconds > 0 ? static_cast<double>(m.generation.generated) / m.busy_seconds : 0.0);
  w.single("fulgur_busy_seconds_total", "counter", "Seconds the engine spent stepping with at least one slot busy.",
           m.busy_seconds);
  w.single("fulgur_queue_length", "gauge", "Requests waiting for a slot.",
           static_cast<double>(m.queued));
  w.single("fulgur_slots_busy", "gauge", "Slots generating or prefilling.",
           static_cast<double>(m.busy_slots));
  w.single("fulgur_slots", "gauge", "Slots (-np).",
           static_cast<double>(m.n_slots));
  // Beside the process's resident memory: a leak grows both, fragmentation only the resident one
  // (the soak, bench/serve_soak.sh, records the two side by side).
  const struct mallinfo2 heap = mallinfo2();
  w.single("fulgur_heap_in_use_bytes", "gauge",
           "Bytes the C allocator has handed out and not had back (glibc mallinfo2: uordblks + hblkhd).",
           static_cast<double>(heap.uordblks + heap.hblkhd));
  w.single("fulgur_target_decodes_total", "counter", "Target decodes of verification batches (all slots in one).",
           static_cast<double>(m.generation.decodes));
  const char* per_drafter[][3] = {
      {"fulgur_drafted_tokens_total", "counter", "Drafted tokens verified, per drafter."},
      {"fulgur_accepted_tokens_total", "counter", "Drafted tokens accepted, per drafter."},
      {"fulgur_verify_steps_total", "counter", "Verify steps with a non-empty draft, per drafter."},
  };
  for (int f = 0; f < 3; ++f) {
    w.family(per_drafter[f][0], per_drafter[f][1], per_drafter[f][2]);
    for (const DrafterStats& d : m.generation.drafters) {
      const int64_t v = f == 0 ? d.drafted : f == 1 ? d.accepted : d.drafts;
      w.sample(cat(per_drafter[f][0], "{drafter=\"", label(d.name), "\"}"), static_cast<double>(v));
    }
  }
  w.family("fulgur_draft_acceptance", "gauge", "Share of drafted tokens accepted at each draft position, per drafter.");
  for (const DrafterStats& d : m.generation.drafters) {
    const std::vector<double> per = d.acceptance_per_position();
    for (size_t i = 0; i < per.size(); ++i) {
      w.sample(cat("fulgur_draft_acceptance{drafter=\"", label(d.name), "\",position=\"", i, "\"}"), per[i]);
    }
  }
  return w.take();
}

}  // namespace fulgur::server
