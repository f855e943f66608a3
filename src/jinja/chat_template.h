// Chat templates: the Jinja2 subset Hugging Face chat templates use, rendered with HF's settings
// (trim_blocks, lstrip_blocks, loopcontrols, {% generation %}, raise_exception, strftime_now,
// and a tojson that is json.dumps with ensure_ascii=False and insertion-ordered keys).
//
//   fulgur::ChatTemplate tmpl(config["chat_template"]);
//   std::string prompt = tmpl.render({{"messages", messages}, {"add_generation_prompt", true},
//                                     {"bos_token", ""}, {"eos_token", "<|im_end|>"}});
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace fulgur {

class ChatTemplate {
 public:
  // Parses `source`; throws fulgur::Error("chat template syntax error at line L, column C: ...").
  explicit ChatTemplate(std::string source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with the context's keys as template variables (messages, add_generation_prompt,
  // tools, enable_thinking, bos_token, eos_token, ...). Keys absent from the context are
  // undefined in the template. Throws fulgur::Error("chat template error at line L, column C:
  // <message>") on runtime errors, including raise_exception(message).
  // HF's apply_chat_template always passes `tools` and `documents` (None when absent), so for
  // identical output pass "tools": null rather than omitting the key.
  // nlohmann::json sorts object keys, so `tojson` of tools and tool-call arguments comes out
  // key-sorted; HF keeps the request's key order, which render_ordered() reproduces.
  std::string render(const nlohmann::json& context) const;
  std::string render_ordered(const nlohmann::ordered_json& context) const;

  const std::string& source() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulgur
