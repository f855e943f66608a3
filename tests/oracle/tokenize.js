#!/usr/bin/env node
// Test oracle: encodes texts with the transformers.js tokenizer (npm @lenml/tokenizers, a fork
// of transformers.js's tokenizers) so fulgur's C++ tokenizer can be compared against code that
// nobody here wrote.
//
// usage: node tokenize.js TOKENIZER_JSON TOKENIZER_CONFIG_JSON INPUT_JSON OUTPUT_JSON
//   INPUT_JSON:  [{"text": "...", "parse_special": true|false}, ...]
//   OUTPUT_JSON: [[ids...], ...] in the same order
//
// Hugging Face always splits out every added token. fulgur follows llama.cpp: CONTROL tokens
// (added tokens that are special or look like "<|...|>") are matched only with parse_special,
// USER_DEFINED ones always. For parse_special = false the oracle therefore gets a tokenizer
// whose added_tokens keep only the USER_DEFINED ones.
"use strict";
const fs = require("fs");
const { TokenizerLoader } = require("@lenml/tokenizers");

const [tokenizerPath, configPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node tokenize.js TOKENIZER_JSON TOKENIZER_CONFIG_JSON INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}
const tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
const tokenizerConfig = JSON.parse(fs.readFileSync(configPath, "utf8"));
const cases = JSON.parse(fs.readFileSync(inputPath, "utf8"));

const looksControl = (t) => t.special || (t.content.startsWith("<|") && t.content.endsWith("|>"));
let full = null;
let plain = null;
const tokenizerFor = (parseSpecial) => {
  if (parseSpecial) {
    full ??= TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
    return full;
  }
  plain ??= TokenizerLoader.fromPreTrained({
    tokenizerJSON: { ...tokenizerJSON, added_tokens: tokenizerJSON.added_tokens.filter((t) => !looksControl(t)) },
    tokenizerConfig,
  });
  return plain;
};

const out = cases.map((c) =>
  tokenizerFor(c.parse_special).encode(c.text, { add_special_tokens: false })
);
fs.writeFileSync(outputPath, JSON.stringify(out));
