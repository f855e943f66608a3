// libFuzzer target for the server's request parsing (src/server/request.h): any bytes as the
// body of /v1/chat/completions, /v1/completions, /tokenize and /detokenize must give either a
// request or a BadRequest, never a crash, a hang or a sanitizer report. Parsed chat messages go
// through a ChatML template as the server would render them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jinja/chat_template.h"
#include "server/request.h"

namespace {

const char* const kChatMl =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fulgur::server;
  static const fulgur::ChatTemplate tmpl(kChatMl);
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  limits.n_vocab = 4096;
  limits.n_ctx_slot = 512;
  try {
    const CompletionRequest r = parse_completion_request(body, Endpoint::kChat, limits);
    nlohmann::json ctx;
    ctx["messages"] = nlohmann::json::array();
    for (const ChatMessage& m : r.messages) ctx["messages"].push_back({{"role", m.role}, {"content", m.content}});
    ctx["add_generation_prompt"] = true;
    (void)tmpl.render(ctx);
  } catch (const fulgur::Error&) {
  }
  try {
    (void)parse_completion_request(body, Endpoint::kCompletion, limits);
  } catch (const fulgur::Error&) {
  }
  try {
    (void)parse_tokenize_request(body);
  } catch (const fulgur::Error&) {
  }
  try {
    (void)parse_detokenize_request(body, limits);
  } catch (const fulgur::Error&) {
  }
  return 0;
}
