// The host-memory prompt cache end to end (--cache-ram; server/prompt_cache.h): with one slot,
// prompt A, then B (A's memory goes to the cache), then A continued: the third request gets A's
// memory back (timings.cache_n = |A|, /metrics counts the save and the load) and its text is
// the text the same requests give with the cache off, on attention, sliding-window and
// recurrent targets, and with the n-gram drafter. With a drafter that reads the target's hidden
// states the cache is off, and the server says so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/model_fixture.h"
#include "serve_process.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::ServeProcess;

std::vector<int32_t> prompt_of(int first, int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(32 + (first + i * 37) % 90);
  return p;
}

struct Reply {
  std::string text;
  int64_t cache_n = -1;
};

Reply complete(const ServeProcess& s, const std::vector<int32_t>& prompt, int max_tokens) {
  auto c = s.client();
  const json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  auto res = c.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
  if (!res || res->status != 200) return {};
  const json j = json::parse(res->body);
  return {j["choices"][0]["text"], j["timings"]["cache_n"]};
}

// A (one token generated, so the slot holds exactly A), B, then A continued.
std::vector<Reply> a_b_a(const ServeProcess& s) {
  const std::vector<int32_t> a = prompt_of(3, 60);
  std::vector<int32_t> a_more = a;
  for (int32_t t : prompt_of(50, 5)) a_more.push_back(t);
  return {complete(s, a, 1), complete(s, prompt_of(11, 40), 1), complete(s, a_more, 12)};
}

TEST(ServePromptCache, APromptWhoseSlotWentToAnotherComesBackFromHostMemory) {
  struct Case {
    std::string arch, spec;
    DType type;
  };
  const Case cases[] = {{"qwen3", "", DType::kQ8_0},
                        {"gemma4", "", DType::kF32},
                        {"qwen35", "", DType::kQ8_0},
                        {"nemotron_h", "", DType::kF32},
                        {"qwen3", "--spec ngram --spec-schedule fixed", DType::kQ8_0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arch + " " + c.spec);
    const std::string m = testing_support::tiny_model(c.arch, c.type, 1);
    const std::string args = "-m " + m + " -t 1 -c 512 --parallel 1 " + c.spec;
    std::vector<Reply> off, on;
    {
      ServeProcess s(args + " --cache-ram 0");
      ASSERT_TRUE(s.ok());
      off = a_b_a(s);
      EXPECT_EQ(s.metric("fulgur_prompt_cache_saves_total"), 0);
    }
    {
      ServeProcess s(args);  // the default budget
      ASSERT_TRUE(s.ok());
      on = a_b_a(s);
      EXPECT_EQ(s.metric("fulgur_prompt_cache_loads_total"), 1);
      EXPECT_GE(s.metric("fulgur_prompt_cache_saves_total"), 1);
      EXPECT_GT(s.metric("fulgur_prompt_cache_bytes"), 0);
    }
    ASSERT_EQ(on.size(), 3u);
    EXPECT_EQ(off[2].cache_n, 0) << "without the cache, the slot held B";
    EXPECT_EQ(on[2].cache_n, 60) << "A's memory came back";
    for (int i = 0; i < 3; ++i) EXPECT_EQ(on[i].text, off[i].text) << "request " << i;
  }
}

TEST(ServePromptCache, IsOffWithADrafterThatReadsTheTargetsHiddenStates) {
  const std::string m = testing_support::tiny_model("qwen35", DType::kQ8_0, 1, /*mtp=*/true);
  ServeProcess s("-m " + m + " -t 1 -c 512 --parallel 1 --spec draft-mtp");
  ASSERT_TRUE(s.ok());
  const std::vector<Reply> r = a_b_a(s);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2].cache_n, 0);
  EXPECT_EQ(s.metric("fulgur_prompt_cache_saves_total"), 0);
  EXPECT_NE(s.stderr_text().find("prompt cache in host memory: off"), std::string::npos) << s.stderr_text();
}

}  // namespace
}  // namespace fulgur
