#include "jinja/chat_template.h"

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace fulgur {

struct ChatTemplate::Impl {
  std::string source;
  chat::Body body;
};

ChatTemplate::ChatTemplate(std::string source) : impl_(std::make_unique<Impl>()) {
  impl_->source = std::move(source);
  chat::LexOptions
      options;  // HF: trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
  impl_->body = chat::parse_template(chat::tokenize(impl_->source, options));
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::json& context) const {
  return chat::render_template(impl_->body, chat::Value::from_json(context));
}

std::string ChatTemplate::render_ordered(const nlohmann::ordered_json& context) const {
  return chat::render_template(impl_->body, chat::Value::from_json(context));
}

const std::string& ChatTemplate::source() const {
  return impl_->source;
}

}  // namespace fulgur
