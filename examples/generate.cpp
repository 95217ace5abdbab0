// The public API in one program, built against an installed inkling (examples/CMakeLists.txt):
// load a model folder, turn the prompt into token ids (with the folder's tokenizer, or a list
// of ids), greedy-decode up to N tokens with a Session and a Sampler, print the ids and text.
//
//   generate MODEL_DIR "The quick brown fox" [N]   prompt text (needs the tokenizer files)
//   generate MODEL_DIR 386,10,415,335 [N]          prompt token ids
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <inkling/engine.h>
#include <inkling/sampler.h>
#include <inkling/tokenizer.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR PROMPT|ID,ID,... [N]\n", argv[0]);
    return 2;
  }
  const std::string model_dir = argv[1], prompt = argv[2];
  const int n = argc > 3 ? std::atoi(argv[3]) : 16;

  auto engine = inkling::Engine::load(model_dir);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().message().c_str());
    return 1;
  }
  // A folder without tokenizer files still runs on token ids.
  auto tokenizer = inkling::Tokenizer::load(model_dir);
  std::vector<int32_t> ids;
  if (prompt.find_first_not_of("0123456789,") == std::string::npos) {
    std::istringstream in(prompt);
    for (std::string id; std::getline(in, id, ',');) ids.push_back(std::atoi(id.c_str()));
  } else if (tokenizer.ok()) {
    ids = tokenizer.value()->encode(prompt);
  } else {
    std::fprintf(stderr, "%s\n", tokenizer.status().message().c_str());
    return 1;
  }

  // A session holds one sequence; prefill returns the logits of the last prompt token.
  std::unique_ptr<inkling::Session> session = engine.value()->new_session();
  auto logits = session->prefill(ids);
  inkling::SamplingParams params;
  params.temperature = 0.0f;  // greedy
  inkling::Sampler sampler(params);
  sampler.set_prompt(ids);
  const std::vector<int32_t>& eos = engine.value()->info().eos_ids;
  std::vector<int32_t> out;
  while (logits.ok() && static_cast<int>(out.size()) < n) {
    const int32_t id = sampler.next(logits.value()).id;
    out.push_back(id);
    if (std::find(eos.begin(), eos.end(), id) != eos.end()) break;
    logits = session->decode(id);
  }
  if (!logits.ok()) {
    std::fprintf(stderr, "%s\n", logits.status().message().c_str());
    return 1;
  }

  std::printf("ids:");
  for (int32_t id : out) std::printf(" %d", id);
  std::printf("\n");
  if (tokenizer.ok()) std::printf("text: %s\n", tokenizer.value()->decode(out).c_str());
  return 0;
}
