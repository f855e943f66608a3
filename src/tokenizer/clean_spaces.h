// llama.cpp's "clean_spaces" step of llama_detokenize, which it applies to the text of a BPE
// vocabulary (gemma4 among them; not to SentencePiece): the spaces a tokenizer put before
// punctuation and English contractions come out again, as Hugging Face's
// clean_up_tokenization does. Three passes over the text:
//   1. " ?", " !", " .", " ,"  lose the space;
//   2. " ' "                   loses both spaces;
//   3. " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
// A space that pass 2 removes after an apostrophe no longer counts as a space before the next
// character, as in llama.cpp, which overwrites it in place.
#pragma once

#include <string>

namespace fulgur {

void clean_up_spaces(std::string& text);

}  // namespace fulgur
