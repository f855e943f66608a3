// Unit tests of the Jinja subset with fixed expectations (no Python needed): statements,
// expressions, filters, whitespace control, error messages with positions, and resource guards.
#include "jinja/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace fulgur {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string render(const std::string& source, const json& context = json::object()) {
  return ChatTemplate(source).render(context);
}

// The message of the fulgur::Error that `fn` throws ("" if it does not throw).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string syntax_error_of(const std::string& source) {
  return error_of([&] { ChatTemplate t(source); });
}

std::string render_error_of(const std::string& source, const json& context = json::object()) {
  return error_of([&] { render(source, context); });
}

TEST(ChatTemplate, PlainTextAndPrint) {
  EXPECT_EQ(render("hello"), "hello");
  EXPECT_EQ(render("{{ name }}!", {{"name", "Ann"}}), "Ann!");
  EXPECT_EQ(render("{{ missing }}|{{ none }}|{{ true }}|{{ 3 }}|{{ 2.0 }}"), "|None|True|3|2.0");
  EXPECT_EQ(render("a\n"), "a");  // keep_trailing_newline=False drops one final newline
  EXPECT_EQ(render("a\n\n"), "a\n");
}

TEST(ChatTemplate, WhitespaceControlLikeHF) {
  // trim_blocks removes the newline after a block tag; lstrip_blocks its indentation.
  EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\nend"), "    x\nend");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}"), "a\nb");  // variable tags are not trimmed
  EXPECT_EQ(render("{# note #}\nx"), "x");
  EXPECT_EQ(render("{%+ if true %}x{% endif +%}\ny"), "x\ny");
  EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
  EXPECT_EQ(render("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n"), "a\nb\n");
}

TEST(ChatTemplate, Expressions) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ -7 % 3 }} {{ 2 ** 10 }}"),
            "3 -4 3.5 2 1024");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' ~ 1 ~ none }} {{ 'x' * 3 }}"),
            "7 9 ab1None xxx");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'b' in 'abc' }} {{ 2 not in [1] }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 'yes' if c else 'no' }} {{ 0 or 'x' }} {{ 1 and 'y' }} {{ not c }}",
                   {{"c", false}}),
            "no x y True");
  EXPECT_EQ(render("{{ [1, 'a', none, {'k': 1.5}] }} {{ (1,) }}"),
            "[1, 'a', None, {'k': 1.5}] (1,)");
  EXPECT_EQ(
      render("{{ 'abc'[::-1] }} {{ [1,2,3][1:] }} {{ 'héllo'[1] }} {{ x[-1] }}", {{"x", {1, 2}}}),
      "cba [2, 3] é 2");
  EXPECT_EQ(render("{{ d.a }} {{ d['a'] }} {{ d.get('b', 7) }} {{ d.zz }}|", {{"d", {{"a", 1}}}}),
            "1 1 7 |");
  EXPECT_EQ(render("{{ 1e16 }} {{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 123.0 }}"),
            "1e+16 0.30000000000000004 1e-05 123.0");
}

TEST(ChatTemplate, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ y is defined }} {{ x is string }} {{ x is not none }}",
                   {{"x", "s"}}),
            "True False True True");
  EXPECT_EQ(render("{{ d is mapping }} {{ l is iterable }} {{ 3 is odd }} {{ 4 is divisibleby 2 }} "
                   "{{ n is none }}",
                   {{"d", json::object()}, {"l", json::array()}, {"n", nullptr}}),
            "True True True True True");
  EXPECT_EQ(render("{{ false is false }} {{ 0 is false }} {{ true is boolean }}"),
            "True False True");
}

TEST(ChatTemplate, ForLoops) {
  EXPECT_EQ(
      render(
          "{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
          {{"xs", {"a", "b"}}}),
      "1a,2b");
  EXPECT_EQ(
      render(
          "{% for x in range(6) if x is even %}{{ loop.index0 }}/{{ loop.length }} {% endfor %}"),
      "0/3 1/3 2/3 ");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", {{"a", 1}, {"b", 2}}}}),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.previtem }}{{ loop.first }}{% endfor %}"),
            "True1False2False");
  EXPECT_EQ(render("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 "
                   "%}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  // Assignments inside a loop do not leak out; namespace attributes do.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [5] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [5] %}{% set ns.x = i %}{% endfor "
                   "%}{{ ns.x }}"),
            "5");
}

TEST(ChatTemplate, SetMacroFilterBlocks) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a + b }}"), "3");
  EXPECT_EQ(render("{% set t %}x{{ 1 }}{% endset %}[{{ t }}]"), "[x1]");
  EXPECT_EQ(render("{% macro greet(who, p='!') %}hi {{ who }}{{ p }}{% endmacro %}{{ greet('a') }} "
                   "{{ greet('b', p='?') }}"),
            "hi a! hi b?");
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(ChatTemplate, Filters) {
  EXPECT_EQ(render("{{ '  a  '|trim }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|{{ [1,2]|join('-') }}|{{ "
                   "'héllo'|length }}"),
            "a|AB|ab|1-2|5");
  EXPECT_EQ(render("{{ u|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }}"),
            "d None d");
  EXPECT_EQ(render("{{ [3,1,2]|sort|first }}{{ [3,1,2]|last }} {{ 'a-b'|replace('-', '+') }} {{ "
                   "3|string }}"),
            "12 a+b 3");
  EXPECT_EQ(render("{{ d|items|list }} {{ 'ab'|list }} {{ '7'|int + 1 }} {{ 2|float }}",
                   {{"d", {{"k", 1}}}}),
            "[('k', 1)] ['a', 'b'] 8 2.0");
  EXPECT_EQ(render("{{ l|map(attribute='n')|join(',') }} {{ l|selectattr('n', 'equalto', "
                   "'b')|list|length }}",
                   {{"l", {{{"n", "a"}}, {{"n", "b"}}}}}),
            "a,b 1");
}

TEST(ChatTemplate, ToJsonMatchesHF) {
  // HF's tojson: json.dumps(ensure_ascii=False), ", " / ": " separators, no HTML escaping.
  ordered_json ctx = {{"v", {{"z", "é<>&'\"\n"}, {"a", {1, 2.5, nullptr, true}}}}};
  EXPECT_EQ(ChatTemplate("{{ v|tojson }}").render_ordered(ctx),
            R"({"z": "é<>&'\"\n", "a": [1, 2.5, null, true]})");
  EXPECT_EQ(
      ChatTemplate("{{ v|tojson(indent=2) }}").render_ordered(ctx),
      "{\n  \"z\": \"é<>&'\\\"\\n\",\n  \"a\": [\n    1,\n    2.5,\n    null,\n    true\n  ]\n}");
  // nlohmann::json sorts keys; ordered_json keeps the caller's order.
  EXPECT_EQ(render("{{ v|tojson }}", {{"v", {{"z", 1}, {"a", 2}}}}), R"({"a": 2, "z": 1})");
  EXPECT_EQ(
      ChatTemplate("{{ v|tojson }}").render_ordered(ordered_json{{"v", {{"z", 1}, {"a", 2}}}}),
      R"({"z": 1, "a": 2})");
}

TEST(ChatTemplate, StringMethodsQwen3Uses) {
  const json ctx = {{"s", "<think>\nreason\n</think>\n\nanswer"}};
  EXPECT_EQ(render("{{ s.split('</think>')[-1].lstrip('\\n') }}", ctx), "answer");
  EXPECT_EQ(
      render("{{ s.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", ctx),
      "reason");
  EXPECT_EQ(
      render("{{ s.startswith('<think>') }} {{ s.endswith('x') }} {{ '\\n a \\n'.strip('\\n') }}|",
             ctx),
      "True False  a |");
  EXPECT_EQ(render("{{ 'a,b,c'.rsplit(',', 1) }} {{ ' a  b '.split() }}"),
            "['a,b', 'c'] ['a', 'b']");
}

TEST(ChatTemplate, Qwen3TemplateRendersToolConversation) {
  std::ifstream f(std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/qwen3_chat_template.jinja",
                  std::ios::binary);
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const ChatTemplate tmpl(ss.str());
  const ordered_json ctx = ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "<think>\nr\n</think>\n\nHello",
       "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": "é<"}}}]},
      {"role": "tool", "content": "ok"}],
    "add_generation_prompt": true, "enable_thinking": false, "tools": [{"name": "f"}]})");
  // Expected text produced by python3-jinja2 with HF's settings (tests/oracle/render_template.py).
  const std::string want =
      "<|im_start|>system\nS\n\n# Tools\n\nYou may call one or more functions to assist with the "
      "user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML "
      "tags:\n<tools>\n{\"name\": \"f\"}\n</tools>\n\n"
      "For each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML "
      "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</"
      "think>\n\nHello\n<tool_call>\n"
      "{\"name\": \"f\", \"arguments\": {\"b\": 1, \"a\": "
      "\"é<\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
      "<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</"
      "think>\n\n";
  EXPECT_EQ(tmpl.render_ordered(ctx), want);
}

TEST(ChatTemplate, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(syntax_error_of("ok\n{% if x %}never closed"),
            "chat template syntax error at line 2, column 23: unexpected end of template, expected "
            "'elif' or 'else' or 'endif'");
  EXPECT_EQ(syntax_error_of("a\n  b {{ x + }}"),
            "chat template syntax error at line 2, column 12: unexpected end of print statement");
  EXPECT_EQ(syntax_error_of("{% endfor %}"),
            "chat template syntax error at line 1, column 4: unexpected 'endfor'");
  EXPECT_EQ(syntax_error_of("{% frobnicate %}"),
            "chat template syntax error at line 1, column 4: unknown or unsupported statement "
            "'frobnicate'");
  EXPECT_EQ(syntax_error_of("{{ 'abc }}"),
            "chat template syntax error at line 1, column 4: unterminated string literal");
  EXPECT_EQ(syntax_error_of("x\n\n  {{ a ]] }}"),
            "chat template syntax error at line 3, column 8: unexpected ']'");
  EXPECT_EQ(syntax_error_of("{# open comment"),
            "chat template syntax error at line 1, column 1: missing end of comment tag");
  EXPECT_EQ(
      syntax_error_of("{{ x"),
      "chat template syntax error at line 1, column 1: unexpected end of template, expected '}}'");
  EXPECT_EQ(syntax_error_of("{% break %}"),
            "chat template syntax error at line 1, column 4: 'break' outside of a loop");
  EXPECT_EQ(syntax_error_of("{{ a $ b }}"),
            "chat template syntax error at line 1, column 6: unexpected char '$'");
}

TEST(ChatTemplate, RuntimeErrorsCarryMessageAndPosition) {
  EXPECT_EQ(
      render_error_of(
          "line\n  {{ raise_exception('Only user and assistant roles are supported!') }}"),
      "chat template error at line 2, column 6: Only user and assistant roles are supported!");
  EXPECT_EQ(render_error_of("{{ u.attr }}"),
            "chat template error at line 1, column 5: 'u' is undefined");
  EXPECT_EQ(
      render_error_of("{{ 'a' + 1 }}"),
      "chat template error at line 1, column 8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render_error_of("{{ x|nosuchfilter }}", {{"x", 1}}),
            "chat template error at line 1, column 5: no filter named 'nosuchfilter'");
  EXPECT_EQ(
      render_error_of("{% for a, b in [[1]] %}{% endfor %}"),
      "chat template error at line 1, column 4: not enough values to unpack (expected 2, got 1)");
  EXPECT_EQ(render_error_of("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat template error at line 1, column 19: cannot assign attribute 'y' on 'x': it is "
            "not a namespace object");
  EXPECT_NE(render_error_of("{{ m.content.startswith('a') }}", {{"m", {{"content", nullptr}}}})
                .find("has no attribute 'startswith'"),
            std::string::npos);
}

TEST(ChatTemplate, HostileTemplatesFailCleanly) {
  EXPECT_NE(syntax_error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}")
                .find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(syntax_error_of(std::string(3000, ' ') + "{{ " + std::string(3000, '[') + " }}")
                .find("syntax error"),
            std::string::npos);
  EXPECT_NE(
      render_error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("macro recursion"),
      std::string::npos);
  EXPECT_NE(render_error_of("{{ range(10000000)|length }}").find("Range too big"),
            std::string::npos);
  EXPECT_NE(render_error_of("{{ 'x' * 10000000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(render_error_of("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
  EXPECT_NE(render_error_of("{{ 2 ** 64 }}").find("overflow"), std::string::npos);
  EXPECT_EQ(render("{{ (-1) ** 1000000000000 }}"), "1");
  // Invalid UTF-8 in data passes through unchanged and does not break code-point operations.
  EXPECT_EQ(render("{{ s }}|{{ s|length }}|{{ s[::-1] }}", {{"s", std::string("a\xff")}}),
            "a\xff|2|\xff"
            "a");
}

TEST(ChatTemplate, LongConversationRenders) {
  std::ifstream f(std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/qwen3_chat_template.jinja",
                  std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const ChatTemplate tmpl(ss.str());
  json messages = json::array();
  const std::string body(4096, 'x');
  for (int i = 0; i < 400; ++i) {
    messages.push_back({{"role", i % 2 == 0 ? "user" : "assistant"},
                        {"content", (i % 2 ? "<think>\nr\n</think>\n\n" : "") + body}});
  }
  const std::string out = tmpl.render({{"messages", messages}, {"add_generation_prompt", true}});
  EXPECT_GT(out.size(), 400u * 4096u);
  EXPECT_EQ(out.rfind("<|im_start|>assistant\n"), out.size() - 22);
}

TEST(ChatTemplate, ContextMustBeAnObject) {
  EXPECT_NE(error_of([] { ChatTemplate("x").render(json::array()); }).find("must be an object"),
            std::string::npos);
}

}  // namespace
}  // namespace fulgur
