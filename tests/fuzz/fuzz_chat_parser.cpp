// Fuzzes the output parser (reasoning / content / tool-call state machine) on arbitrary token
// streams. Input: first byte picks the prompt's last control token and stop_on_endoftext; then
// per token a tag byte: < 0x30 a control token (one of the parser's ids, or an unknown high id),
// else a text token carrying the next (tag % 8) + 1 bytes. Checks that the streamed deltas
// concatenate to the final reasoning and content.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "inkling/chat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inkling;
  if (size < 1) return 0;
  const SpecialTokenIds ids;
  const int32_t controls[] = {ids.endoftext,
                              ids.message_user,
                              ids.message_model,
                              ids.message_system,
                              ids.message_tool,
                              ids.content_text,
                              ids.end_sampling,
                              ids.content_thinking,
                              ids.end_message,
                              ids.content_tool_error,
                              ids.invoke_tool_json,
                              ids.invoke_tool_text,
                              ids.first_control,
                              200030,
                              -1};
  constexpr size_t kControls = sizeof(controls) / sizeof(controls[0]);
  OutputParserOptions opts;
  opts.prompt_last_token = controls[(data[0] >> 1) % kControls];
  opts.stop_on_endoftext = data[0] & 1;
  OutputParser parser(ids, opts);
  std::string reasoning, content;
  auto take = [&](const ParseDelta& d) {
    reasoning += d.reasoning;
    content += d.content;
  };
  for (size_t i = 1; i < size;) {
    const uint8_t tag = data[i++];
    if (tag < 0x30) {
      take(parser.push(controls[tag % kControls], ""));
      continue;
    }
    const size_t n = std::min<size_t>((tag % 8) + 1, size - i);
    take(parser.push(1000 + tag, fuzz::as_text(data + i, n)));
    i += n;
  }
  take(parser.finish());
  const ParsedMessage& m = parser.result();
  if (m.reasoning_content != reasoning || m.content != content) __builtin_trap();
  return 0;
}
