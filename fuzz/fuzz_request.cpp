// libFuzzer target for the server's request parsing (src/server/request.h): any bytes as the
// body of /v1/chat/completions, /v1/completions, /tokenize and /detokenize must give either a
// request or a BadRequest, never a crash, a hang or a sanitizer report. Parsed chat messages go
// through a ChatML template that takes tools, as the server would render them; and the same
// bytes, read as a model's reply, go through every tool-call format's parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jinja/chat_template.h"
#include "server/chat_prompt.h"
#include "server/request.h"
#include "server/tool_call_parser.h"

namespace {

const char* const kChatMl =
    "{% if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n{{ c.function | tojson }}\n</tool_call>{% endfor %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

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
    (void)render_chat_prompt(tmpl, r);
  } catch (const fulgur::Error&) {
  }
  for (const ToolCallFormat& f : tool_call_formats()) {
    ToolCallParser parser(f, nlohmann::ordered_json::array(), /*parallel=*/true);
    (void)parser.push(body.substr(0, size / 2));
    (void)parser.push(body.substr(size / 2));
    (void)parser.finish();
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
