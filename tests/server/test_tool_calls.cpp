// Reading tool calls out of a reply (server/tool_call_formats.h, tool_call_parser.h), without a
// model: every format with one and several calls, content around them, malformed blocks given
// back as content word for word, and streaming split at every byte (and byte by byte) giving
// what the whole text gives.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "server/tool_call_parser.h"
#include "server/tool_choice_grammar.h"

namespace fulgur::server {
namespace {

using nlohmann::ordered_json;

const ToolCallFormat& format(std::string_view family) {
  for (const ToolCallFormat& f : tool_call_formats()) {
    if (f.family == family) return f;
  }
  ADD_FAILURE() << "no format " << family;
  return tool_call_formats()[0];
}

// A tool whose parameters declare types, for the format that reads them from the schema.
const ordered_json kTools = ordered_json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "zip": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
      "a": {"type": "number"}, "b": {"type": "number"}}}}}])");

struct Reply {
  std::string content;
  std::vector<ToolCall> calls;
};

// The text fed in the given pieces, then finished.
Reply parse_pieces(const ToolCallFormat& f, const std::vector<std::string>& pieces, bool parallel = true) {
  ToolCallParser p(f, kTools, parallel);
  Reply r;
  const auto take = [&r](ParsedReply out) {
    r.content += out.content;
    for (ToolCall& c : out.calls) r.calls.push_back(std::move(c));
  };
  for (const std::string& piece : pieces) take(p.push(piece));
  take(p.finish());
  EXPECT_EQ(p.n_calls(), r.calls.size());
  return r;
}

Reply parse_all(const ToolCallFormat& f, const std::string& text, bool parallel = true) {
  return parse_pieces(f, {text}, parallel);
}

// name(arguments) of each call, for comparing replies whose ids differ.
std::vector<std::string> signatures(const Reply& r) {
  std::vector<std::string> out;
  for (const ToolCall& c : r.calls) out.push_back(c.name + c.arguments);
  return out;
}

// Every split of the text into two pieces, and byte by byte, reads as the whole text does.
void expect_same_when_split(const ToolCallFormat& f, const std::string& text) {
  const Reply whole = parse_all(f, text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const Reply split = parse_pieces(f, {text.substr(0, cut), text.substr(cut)});
    ASSERT_EQ(split.content, whole.content) << "cut at " << cut;
    ASSERT_EQ(signatures(split), signatures(whole)) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (const char c : text) bytes.emplace_back(1, c);
  const Reply by_byte = parse_pieces(f, bytes);
  EXPECT_EQ(by_byte.content, whole.content);
  EXPECT_EQ(signatures(by_byte), signatures(whole));
}

TEST(ToolCallFormats, RecognisedFromTheTemplateText) {
  // The distinguishing lines of each family's published template.
  EXPECT_EQ(tool_call_format_for(R"({{- '<tool_call>\n{"name": "' }}{{- tool_call.name }})")->family, "qwen3-json");
  EXPECT_EQ(tool_call_format_for("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"
                                 "{{- '<parameter=' + args_name + '>\\n' }}")->family, "qwen3-xml");
  EXPECT_EQ(tool_call_format_for("{{- '<TOOLCALL>[' -}}{%- for call in message.tool_calls -%}")->family, "nemotron-h");
  EXPECT_EQ(tool_call_format_for("{{- '<|tool_call>call:' + function['name'] + '{' -}}")->family, "gemma4");
  EXPECT_EQ(tool_call_format_for("{% for m in messages %}{{ m.content }}{% endfor %}"), nullptr);
}

TEST(ToolCallFormats, QwenJsonOneCallWithContentBefore) {
  const Reply r = parse_all(format("qwen3-json"),
                            "Let me look.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Paris\", \"days\": 3}}\n</tool_call>");
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","days":3})");  // compact, the model's key order
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(r.calls[0].id.size(), 5u + 24u);
}

TEST(ToolCallFormats, QwenJsonSeveralCallsEachWithItsOwnId) {
  const std::string text =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}\n</tool_call>";
  const Reply r = parse_all(format("qwen3-json"), text);
  EXPECT_EQ(r.content, "");  // whitespace between calls is not content
  EXPECT_EQ(signatures(r), (std::vector<std::string>{R"(add{"a":1,"b":2})", R"(get_weather{"city":"Oslo"})"}));
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
  // parallel_tool_calls: false keeps the first.
  EXPECT_EQ(signatures(parse_all(format("qwen3-json"), text, false)), (std::vector<std::string>{R"(add{"a":1,"b":2})"}));
  expect_same_when_split(format("qwen3-json"), "Sure.\n" + text + "\nDone?");
}

TEST(ToolCallFormats, NemotronArrayOfCalls) {
  const std::string text = "I will call two tools.\n<TOOLCALL>[{\"name\": \"add\", \"arguments\": {\"a\": 1.5, \"b\": -2}}, "
                           "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"K\\u00f8ge\"}}]</TOOLCALL>";
  const Reply r = parse_all(format("nemotron-h"), text);
  EXPECT_EQ(r.content, "I will call two tools.");
  EXPECT_EQ(signatures(r), (std::vector<std::string>{R"(add{"a":1.5,"b":-2})", "get_weather{\"city\":\"K\xc3\xb8ge\"}"}));
  expect_same_when_split(format("nemotron-h"), text);
}

// Gemma 4's own value syntax read into JSON: bare keys, <|"|>-quoted strings taken as written
// (quotes, backslashes, braces and newlines inside them included), numbers, booleans, null,
// nested objects and arrays; several call blocks in a row.
TEST(ToolCallFormats, Gemma4CallsAndTheirValueSyntax) {
  const std::string text =
      "Checking both.<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\" {x}\\<|\"|>,days:3}<tool_call|>"
      "<|tool_call>call:add{a:-1.5e2,b:0,opts:{exact:true,note:null,tags:[<|\"|>a:b<|\"|>, 2, []],empty:{}}}<tool_call|>";
  const Reply r = parse_all(format("gemma4"), text);
  EXPECT_EQ(r.content, "Checking both.");
  EXPECT_EQ(signatures(r), (std::vector<std::string>{
                               R"(get_weather{"city":"Paris, \"FR\" {x}\\","days":3})",
                               R"(add{"a":-150.0,"b":0,"opts":{"exact":true,"note":null,"tags":["a:b",2,[]],"empty":{}}})"}));
  expect_same_when_split(format("gemma4"), text + "\nAnd then?");
  // A call without arguments, and a string with a newline in it.
  EXPECT_EQ(signatures(parse_all(format("gemma4"), "<|tool_call>call:add{}<tool_call|>")),
            (std::vector<std::string>{"add{}"}));
  EXPECT_EQ(signatures(parse_all(format("gemma4"), "<|tool_call>call:get_weather{city:<|\"|>a\nb<|\"|>}<tool_call|>")),
            (std::vector<std::string>{R"(get_weather{"city":"a\nb"})"}));
}

// What does not read as a Gemma 4 call is content, word for word.
TEST(ToolCallFormats, Gemma4MalformedBlocksAreContent) {
  for (const std::string block : {"call:add{a:1", "call:add{a:1}}", "call:add{a:<|\"|>x}", "call:{a:1}", "call:a b{}",
                                  "call:add{a:1,a:2}", "call:add{a:tru}", "call:add{:1}", "add{a:1}", "call:add{a:1,}",
                                  "call:add{a:[1,}", "call:add"}) {
    SCOPED_TRACE(block);
    const std::string text = "x <|tool_call>" + block + "<tool_call|> y";
    const Reply r = parse_all(format("gemma4"), text);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCallFormats, QwenXmlValuesTypedByTheSchema) {
  const std::string text =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n"
      "</parameter>\n<parameter=zip>\n10001\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=add>\n<parameter=a>\n2.5\n</parameter>\n<parameter=b>\nnot a number\n</parameter>\n"
      "</function>\n</tool_call>";
  const Reply r = parse_all(format("qwen3-xml"), text);
  EXPECT_EQ(r.content, "");
  // zip is declared a string: "10001" stays text; days is JSON; a value that is not JSON is text.
  EXPECT_EQ(signatures(r), (std::vector<std::string>{R"(get_weather{"city":"New York","days":3,"zip":"10001"})",
                                                     R"(add{"a":2.5,"b":"not a number"})"}));
  expect_same_when_split(format("qwen3-xml"), "Checking.\n\n" + text);
}

TEST(ToolCallFormats, QwenXmlMultiLineValueAndNoParameters) {
  const Reply r = parse_all(format("qwen3-xml"),
                            "<tool_call>\n<function=add>\n</function>\n</tool_call><tool_call>\n<function=get_weather>\n"
                            "<parameter=city>\nline one\nline two\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(signatures(r), (std::vector<std::string>{"add{}", R"(get_weather{"city":"line one\nline two"})"}));
}

TEST(ToolCallFormats, MalformedBlocksAreGivenBackAsContent) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"qwen3-json", "A <tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1,}}\n</tool_call> B"},  // bad JSON
      {"qwen3-json", "<tool_call>\n[1, 2]\n</tool_call>"},                                     // not an object
      {"qwen3-json", "<tool_call>\n{\"arguments\": {}}\n</tool_call>"},                         // no name
      {"qwen3-json", "<tool_call>\n{\"name\": \"a b\", \"arguments\": {}}\n</tool_call>"},      // not a name
      {"qwen3-json", "<tool_call>\n{\"name\": \"add\", \"arguments\": 5}\n</tool_call>"},       // arguments not an object
      {"nemotron-h", "<TOOLCALL>[]</TOOLCALL>"},
      {"nemotron-h", "<TOOLCALL>[{\"name\": \"add\"}, 3]</TOOLCALL>"},
      {"qwen3-xml", "<tool_call>\n<function=add>\n<parameter=a>\n1\n</function>\n</tool_call>"},  // unclosed parameter
      {"qwen3-xml", "<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"},          // the other format
      {"qwen3-xml", "<tool_call>\n<function=</function>\n</tool_call>"},
  };
  for (const auto& [family, text] : cases) {
    SCOPED_TRACE(family + ": " + text);
    const Reply r = parse_all(format(family), text);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.content, text);
    expect_same_when_split(format(family), text);
  }
}

TEST(ToolCallFormats, AnUnclosedBlockAtTheEnd) {
  // A model that stops right after its call's JSON: the call is read.
  const Reply ended = parse_all(format("qwen3-json"), "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n");
  EXPECT_EQ(signatures(ended), (std::vector<std::string>{R"(add{"a":1})"}));
  // Cut in the middle (max_tokens): what was written is content.
  const std::string cut = "Hm <tool_call>\n{\"name\": \"add\", \"argu";
  const Reply r = parse_all(format("qwen3-json"), cut);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, cut);
}

TEST(ToolCallFormats, TextThatOnlyLooksLikeATagStartIsContent) {
  // "<tool" is held while it may open a call and released when it does not; trailing whitespace
  // of a reply without calls is kept.
  ToolCallParser p(format("qwen3-json"), kTools, true);
  EXPECT_EQ(p.push("a <tool").content, "a");
  EXPECT_EQ(p.push("box> b \n").content, " <toolbox> b");
  EXPECT_EQ(p.push("<").content, "");
  EXPECT_EQ(p.finish().content, " \n<");
}


bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& reply) {
  GrammarMatcher m(g);
  return m.accept_bytes(reply) && m.complete();
}

ToolSettings settings(ToolChoice choice, bool parallel = true, std::string function = "") {
  ToolSettings s;
  s.tools = kTools;
  s.choice = choice;
  s.parallel = parallel;
  s.function = std::move(function);
  return s;
}

const std::string kWeather = R"({"name": "get_weather", "arguments": {"city": "Paris", "days": 2}})";
const std::string kAdd = R"({"name": "add", "arguments": {"a": 1.5, "b": -2}})";

TEST(ToolChoiceGrammar, RequiredMeansCallsOnlyWithTheToolsSchemas) {
  const auto g = tool_choice_grammar(format("qwen3-json"), settings(ToolChoice::kRequired));
  ASSERT_NE(g, nullptr);
  const auto block = [](const std::string& call) { return "<tool_call>\n" + call + "\n</tool_call>"; };
  EXPECT_TRUE(accepts(g, block(kWeather)));
  EXPECT_TRUE(accepts(g, block(kAdd)));
  EXPECT_TRUE(accepts(g, block(kWeather) + "\n" + block(kAdd)));  // parallel calls
  EXPECT_FALSE(accepts(g, "Sure. " + block(kWeather)));          // no content first
  EXPECT_FALSE(accepts(g, block(R"({"name": "get_time", "arguments": {}})")));  // not a tool
  EXPECT_FALSE(accepts(g, block(R"({"name": "add", "arguments": {"a": "one", "b": 2}})")));  // a's type
  EXPECT_FALSE(accepts(g, "<tool_call>\n" + kWeather));           // unclosed
  // Whatever the grammar allows, the format's reader takes as calls.
  const std::optional<std::vector<ToolCall>> read = format("qwen3-json").read_block("\n" + kAdd + "\n", kTools);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ((*read)[0].name, "add");
}

TEST(ToolChoiceGrammar, ANamedFunctionAndNoParallelCalls) {
  const auto named = tool_choice_grammar(format("qwen3-json"), settings(ToolChoice::kFunction, true, "add"));
  ASSERT_NE(named, nullptr);
  EXPECT_TRUE(accepts(named, "<tool_call>\n" + kAdd + "\n</tool_call>"));
  EXPECT_FALSE(accepts(named, "<tool_call>\n" + kWeather + "\n</tool_call>"));
  EXPECT_FALSE(accepts(named, "<tool_call>\n" + kAdd + "\n</tool_call>\n<tool_call>\n" + kAdd + "\n</tool_call>"));
  const auto single = tool_choice_grammar(format("nemotron-h"), settings(ToolChoice::kRequired, false));
  ASSERT_NE(single, nullptr);
  EXPECT_TRUE(accepts(single, "<TOOLCALL>[" + kWeather + "]</TOOLCALL>"));
  EXPECT_FALSE(accepts(single, "<TOOLCALL>[" + kWeather + ", " + kAdd + "]</TOOLCALL>"));
  const auto many = tool_choice_grammar(format("nemotron-h"), settings(ToolChoice::kRequired, true));
  EXPECT_TRUE(accepts(many, "<TOOLCALL>[" + kWeather + ", " + kAdd + "]</TOOLCALL>"));
}

TEST(ToolChoiceGrammar, NothingToEnforce) {
  EXPECT_EQ(tool_choice_grammar(format("qwen3-json"), settings(ToolChoice::kAuto)), nullptr);
  EXPECT_EQ(tool_choice_grammar(format("qwen3-json"), settings(ToolChoice::kNone)), nullptr);
  // Parameters the grammar cannot express: any object as the arguments, not an error.
  ToolSettings s = settings(ToolChoice::kRequired);
  s.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {
      "type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}}}])");
  const auto g = tool_choice_grammar(format("qwen3-json"), s);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
}

// A qwen3-xml call as the templates write it.
std::string xml_call(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out = "<tool_call>\n<function=" + name + ">\n";
  for (const auto& [key, value] : params) out += "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
  return out + "</function>\n</tool_call>";
}

TEST(ToolChoiceGrammar, Qwen3XmlCallsFollowTheParametersSchemas) {
  const auto g = tool_choice_grammar(format("qwen3-xml"), settings(ToolChoice::kRequired));
  ASSERT_NE(g, nullptr);
  const std::string weather = xml_call("get_weather", {{"city", "Paris <3, a\nnew line"}, {"days", "2"}});
  const std::string add = xml_call("add", {{"a", "1.5"}, {"b", "-2"}});
  EXPECT_TRUE(accepts(g, weather));
  EXPECT_TRUE(accepts(g, add));
  EXPECT_TRUE(accepts(g, xml_call("get_weather", {})));  // every parameter is optional here
  EXPECT_TRUE(accepts(g, weather + "\n" + add));         // parallel calls
  EXPECT_FALSE(accepts(g, "Sure. " + weather));
  EXPECT_FALSE(accepts(g, xml_call("get_time", {})));                           // not a tool
  EXPECT_FALSE(accepts(g, xml_call("get_weather", {{"days", "two"}})));         // days is an integer
  EXPECT_FALSE(accepts(g, xml_call("get_weather", {{"country", "FR"}})));       // not a parameter
  EXPECT_FALSE(accepts(g, xml_call("get_weather", {{"days", "2"}, {"city", "Oslo"}})));  // schema order
  EXPECT_FALSE(accepts(g, weather.substr(0, weather.size() - 3)));             // unclosed
  // Whatever the grammar allows, the format's reader takes as the same calls.
  const std::string block = weather.substr(std::string("<tool_call>").size(),
                                           weather.size() - std::string("<tool_call></tool_call>").size());
  const std::optional<std::vector<ToolCall>> read = format("qwen3-xml").read_block(block, kTools);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ((*read)[0].name, "get_weather");
  EXPECT_EQ((*read)[0].arguments, R"({"city":"Paris <3, a\nnew line","days":2})");
}

TEST(ToolChoiceGrammar, Qwen3XmlRequiredParametersANamedFunctionAndNoParallelCalls) {
  ToolSettings s = settings(ToolChoice::kFunction, true, "get_weather");
  s.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {"city": {"type": "string"}, "units": {"enum": ["C", "F"]},
      "days": {"type": "integer"}}, "required": ["days", "city"]}}},
      {"type": "function", "function": {"name": "noop"}}])");
  const auto g = tool_choice_grammar(format("qwen3-xml"), s);
  ASSERT_NE(g, nullptr);
  // Required parameters first, then the optional ones, each in the schema's order.
  const std::string call = xml_call("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"units", "C"}});
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, xml_call("get_weather", {{"city", "Oslo"}, {"days", "3"}})));
  EXPECT_FALSE(accepts(g, xml_call("get_weather", {{"city", "Oslo"}})));                           // days missing
  EXPECT_FALSE(accepts(g, xml_call("get_weather", {{"city", "Oslo"}, {"days", "3"}, {"units", "K"}})));
  EXPECT_FALSE(accepts(g, call + "\n" + call));  // a named function: one call
  EXPECT_FALSE(accepts(g, xml_call("noop", {})));
  // A function without parameters takes any.
  s.function = "noop";
  const auto noop = tool_choice_grammar(format("qwen3-xml"), s);
  EXPECT_TRUE(accepts(noop, xml_call("noop", {{"x", "1"}, {"y", "text"}})));
}

// A Gemma 4 call block as its template writes it.
std::string g4_call(const std::string& name, const std::string& args) {
  return "<|tool_call>call:" + name + "{" + args + "}<tool_call|>";
}
const std::string kQ = "<|\"|>";  // Gemma 4's string quote

TEST(ToolChoiceGrammar, Gemma4CallsInItsOwnValueSyntax) {
  ToolSettings s = settings(ToolChoice::kRequired);
  s.tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "zip": {"type": "string"}, "City": {"type": "string"}, "days": {"type": ["integer", "null"]},
      "units": {"enum": ["C", "F"]}, "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
      "at": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lon", "lat"]}},
      "required": ["zip", "City"]}}},
    {"type": "function", "function": {"name": "noop"}},
    {"type": "function", "function": {"name": "when", "parameters": {"type": "object", "properties": {
      "t": {"type": "string", "pattern": "^[0-9]+$"}}}}}])");
  const auto g = tool_choice_grammar(format("gemma4"), s);
  ASSERT_NE(g, nullptr);
  // Keys sorted by name case-insensitively (dictsort), optional ones left out, no spaces.
  const std::string full = g4_call("get_weather", "at:{lat:59.9,lon:10.7},City:" + kQ + "Oslo <3 | x" + kQ +
                                                      ",days:3,tags:[true,false],units:" + kQ + "C" + kQ + ",zip:" + kQ + "0150" + kQ);
  EXPECT_TRUE(accepts(g, full));
  EXPECT_TRUE(accepts(g, g4_call("get_weather", "City:" + kQ + kQ + ",days:null,zip:" + kQ + "1" + kQ)));
  EXPECT_TRUE(accepts(g, full + g4_call("noop", "x:[1,{y:" + kQ + "z" + kQ + "}]")));  // parallel calls
  EXPECT_FALSE(accepts(g, "Sure. " + full));                                                    // no content first
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "Oslo" + kQ)));                 // zip missing
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "zip:" + kQ + "1" + kQ + ",City:" + kQ + "O" + kQ)));  // order
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "O" + kQ + ",days:" + kQ + "3" + kQ + ",zip:" + kQ + "1" + kQ)));
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "O" + kQ + ",units:" + kQ + "K" + kQ + ",zip:" + kQ + "1" + kQ)));
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "a<|b" + kQ + ",zip:" + kQ + "1" + kQ)));  // a tag start
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "a|>b" + kQ + ",zip:" + kQ + "1" + kQ)));  // a tag end
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:\"O\",zip:" + kQ + "1" + kQ)));   // JSON's quotes
  EXPECT_FALSE(accepts(g, g4_call("get_weather", "City:" + kQ + "O" + kQ + ",tags:[true,true,true],zip:" + kQ + "1" + kQ)));
  EXPECT_FALSE(accepts(g, g4_call("get_time", "")));                                         // not a tool
  // A schema Gemma's syntax is not held to here (a pattern): any arguments.
  EXPECT_TRUE(accepts(g, g4_call("when", "t:" + kQ + "soon" + kQ + ",u:1")));
  // Whatever the grammar allows, the format's reader takes as the calls it spells.
  const Reply r = parse_all(format("gemma4"), full);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ordered_json::parse(r.calls[0].arguments),
            ordered_json::parse(R"({"at":{"lat":59.9,"lon":10.7},"City":"Oslo <3 | x","days":3,"tags":[true,false],"units":"C","zip":"0150"})"));
  EXPECT_EQ(r.content, "");
  // A named function, and no parallel calls.
  s.choice = ToolChoice::kFunction;
  s.function = "noop";
  const auto named = tool_choice_grammar(format("gemma4"), s);
  EXPECT_TRUE(accepts(named, g4_call("noop", "")));
  EXPECT_FALSE(accepts(named, g4_call("noop", "") + g4_call("noop", "")));
  EXPECT_FALSE(accepts(named, full));
}

}  // namespace
}  // namespace fulgur::server
