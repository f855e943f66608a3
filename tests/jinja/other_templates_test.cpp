// Templates written here in the styles of other common HF chat templates (Llama-3-like header
// tokens with trimmed content and indented tool JSON, Mistral-like role-alternation checks with
// raise_exception, Gemma-like role renaming, DeepSeek-R1-like namespaces, multimodal content
// parts), compared against python3-jinja2 with HF's settings; plus a mutation robustness test.
#include <gtest/gtest.h>

#include <random>

#include "jinja/chat_template.h"
#include "jinja/oracle.h"
#include "core/error.h"

namespace fulgur {
namespace {

using nlohmann::ordered_json;

const char* kHeaderStyle = R"({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none and tools is defined %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- system_message }}
{%- if tools is defined and tools %}
    {{- "\nFunctions:\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable and message.content is not string %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)";

const char* kAlternating = R"({%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
)";

const char* kRoleRename =
    R"({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '
' + message['content'] | trim + '<end_of_turn>
' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
'}}{% endif %})";

const char* kNamespaces =
    R"({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<|User|>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is none %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls']%}{%- if not ns.is_first %}{{'<|Assistant|><|tool_calls_begin|><|tool_call_begin|>' + tool['type'] + '<|tool_sep|>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<|tool_call_end|>'}}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<|tool_call_begin|>' + tool['type'] + '<|tool_sep|>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<|tool_call_end|>'}}{{'<|tool_calls_end|><|end_of_sentence|>'}}{%- endif %}{%- endfor %}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{%- if ns.is_tool %}{{'<|tool_outputs_end|>' + message['content'] + '<|end_of_sentence|>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<|Assistant|>' + content + '<|end_of_sentence|>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<|tool_outputs_begin|><|tool_output_begin|>' + message['content'] + '<|tool_output_end|>'}}{%- set ns.is_output_first = false %}{%- else %}{{'\n<|tool_output_begin|>' + message['content'] + '<|tool_output_end|>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<|tool_outputs_end|>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<|Assistant|><think>\n'}}{% endif %})";

const char* kContentParts = R"({%- for message in messages -%}
<|{{ message.role }}|>
{% if message.content is string -%}
{{ message.content }}
{%- else -%}
{%- for part in message.content -%}
{%- if part.type == 'text' %}{{ part.text }}{% elif part.type == 'image' %}<image>{% else %}{{ raise_exception('unknown part ' ~ part.type) }}{% endif -%}
{%- endfor -%}
{%- endif %}
<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>
{% endif %})";

TEST(ChatOtherTemplates, MatchJinja2) {
  if (const std::string why = test::oracle_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto msgs = [](const char* j) { return ordered_json::parse(j); };
  const ordered_json simple =
      msgs(R"([{"role": "system", "content": "  Be nice.  "}, {"role": "user", "content": "Hi "},
      {"role": "assistant", "content": " Hello! "}, {"role": "user", "content": "Bye"}])");
  const ordered_json no_system = msgs(
      R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "<think>x</think>Yo"},
      {"role": "user", "content": "Q"}])");
  const ordered_json bad_order =
      msgs(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  const ordered_json tool_flow =
      msgs(R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "w", "arguments": "{\"c\": 1}"}},
                                                           {"type": "function", "function": {"name": "w", "arguments": "{\"c\": 2}"}}]},
      {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}, {"role": "assistant", "content": "done"}])");
  const ordered_json llama_tool = msgs(R"([{"role": "user", "content": "weather?"},
      {"role": "assistant", "tool_calls": [{"function": {"name": "w", "arguments": {"city": "Oslo", "days": [1, 2]}}}]},
      {"role": "tool", "content": {"temp": 3}}, {"role": "tool", "content": "plain"}])");
  const ordered_json parts =
      msgs(R"([{"role": "user", "content": [{"type": "text", "text": "look: "}, {"type": "image"}]},
      {"role": "assistant", "content": "a cat"}])");
  const ordered_json bad_part = msgs(R"([{"role": "user", "content": [{"type": "video"}]}])");
  const ordered_json tools = ordered_json::parse(
      R"([{"type": "function", "function": {"name": "w", "parameters": {"city": {"type": "string"}}}}])");

  struct Case {
    const char* tmpl;
    ordered_json messages;
    bool gen;
    bool with_tools;
  };
  const Case cases[] = {
      {kHeaderStyle, simple, true, false},    {kHeaderStyle, no_system, false, true},
      {kHeaderStyle, llama_tool, true, true}, {kHeaderStyle, tool_flow, true, false},
      {kAlternating, simple, false, false},   {kAlternating, no_system, true, false},
      {kAlternating, bad_order, true, false}, {kAlternating, tool_flow, true, false},
      {kRoleRename, no_system, true, false},  {kRoleRename, simple, true, false},
      {kNamespaces, simple, true, false},     {kNamespaces, no_system, true, false},
      {kNamespaces, tool_flow, true, false},  {kContentParts, parts, true, false},
      {kContentParts, bad_part, true, false},
  };
  std::vector<test::OracleCase> oracle_cases;
  for (const Case& c : cases) {
    ordered_json ctx = {{"messages", c.messages},
                        {"add_generation_prompt", c.gen},
                        {"bos_token", "<s>"},
                        {"eos_token", "</s>"}};
    if (c.with_tools) ctx["tools"] = tools;
    oracle_cases.push_back({c.tmpl, ctx});
  }
  const auto want = test::run_oracle(oracle_cases);
  for (size_t i = 0; i < oracle_cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + " context " + oracle_cases[i].context.dump());
    std::string got;
    bool ok = true;
    try {
      got = ChatTemplate(oracle_cases[i].template_source).render_ordered(oracle_cases[i].context);
    } catch (const Error& e) {
      ok = false;
      got = e.what();
    }
    if (!want[i].ok) {
      EXPECT_FALSE(ok) << "python failed (" << want[i].output << ") but we rendered:\n" << got;
      continue;
    }
    ASSERT_TRUE(ok) << got << "\npython:\n" << want[i].output;
    EXPECT_EQ(got, want[i].output);
  }
}

// Random single-character edits of a real template must parse-and-render or throw
// fulgur::Error; never crash or hang (run under ASan/UBSan in the sanitizer job).
TEST(ChatOtherTemplates, MutatedTemplatesFailCleanly) {
  const std::string base = kHeaderStyle;
  const ordered_json ctx = {
      {"messages",
       ordered_json::parse(
           R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])")},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"}};
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\"|.,:=~ \nabcxyz0123456789_*/<>!";
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          s[at] = alphabet[rng() % alphabet.size()];
      }
    }
    try {
      ChatTemplate t(s);
      ++parsed;
      (void)t.render_ordered(ctx);
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace fulgur
