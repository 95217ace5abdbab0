// The sampling options `generate` and `chat` share (see sampling_options.h).
#include "sampling_options.h"
#include "trim.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

namespace inkling::cli {

Result<std::vector<std::pair<int32_t, float>>> parse_logit_bias(const std::string& text) {
  std::vector<std::pair<int32_t, float>> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    const size_t eq = item.find('=');
    auto bad = [&] {
      return Status::error("--logit-bias: '" + item +
                           "' is not ID=BIAS (a token id, '=', a number)");
    };
    if (eq == std::string::npos) return bad();
    const std::string id_text = trim(item.substr(0, eq)), bias_text = trim(item.substr(eq + 1));
    if (id_text.empty() || bias_text.empty() ||
        id_text.find_first_not_of("0123456789") != std::string::npos)
      return bad();
    errno = 0;
    char* end = nullptr;
    const unsigned long long id = std::strtoull(id_text.c_str(), &end, 10);
    if (errno == ERANGE || id > uint64_t(std::numeric_limits<int32_t>::max()))
      return Status::error("--logit-bias: token id " + id_text + " is out of range");
    end = nullptr;
    const double bias = std::strtod(bias_text.c_str(), &end);
    if (end == bias_text.c_str() || *end != '\0') return bad();
    if (!std::isfinite(bias) || std::fabs(bias) > double(std::numeric_limits<float>::max()))
      return Status::error("--logit-bias: the bias of token " + id_text + " ('" + bias_text +
                           "') is not a finite 32-bit float");
    out.emplace_back(int32_t(id), float(bias));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Status check_logit_bias(const SamplingParams& p, int64_t vocab) {
  for (auto [id, bias] : p.logit_bias)
    if (int64_t(id) >= vocab)
      return Status::error("--logit-bias: token " + std::to_string(id) +
                           " is outside the vocabulary (" + std::to_string(vocab) + " tokens)");
  return Status::success();
}

Result<SamplingParams> SamplingOptions::resolved() const {
  SamplingParams p = params;
  // CLI11's range checks let NaN through.
  for (auto [name, v] : {std::pair{"--temperature", p.temperature},
                         {"--top-p", p.top_p},
                         {"--min-p", p.min_p},
                         {"--repeat-penalty", p.repetition_penalty},
                         {"--presence-penalty", p.presence_penalty},
                         {"--frequency-penalty", p.frequency_penalty}})
    if (!std::isfinite(v)) return Status::error(std::string(name) + ": not a finite number");
  if (!logit_bias.empty()) {
    auto bias = parse_logit_bias(logit_bias);
    if (!bias.ok()) return bias.status();
    p.logit_bias = std::move(bias.value());
  }
  p.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
  return p;
}

void add_sampling_options(CLI::App& app, SamplingOptions* s) {
  app.add_option("--temperature,--temp", s->params.temperature, "sampling temperature (0 = greedy)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", s->params.top_k, "keep the k most likely tokens (0 = off)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", s->params.top_p, "nucleus sampling mass (1 = off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", s->params.min_p, "drop tokens below min_p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", s->seed, "random seed (default: random)");
  app.add_option("--repeat-penalty", s->params.repetition_penalty,
                 "tokens already in the prompt or output: positive logits divided by this, "
                 "negative ones multiplied (1 = off)")
      ->check(CLI::Range(0.01, 10.0));
  app.add_option("--presence-penalty", s->params.presence_penalty,
                 "subtracted from the logit of every token already generated (0 = off)")
      ->check(CLI::Range(-2.0, 2.0));
  app.add_option("--frequency-penalty", s->params.frequency_penalty,
                 "subtracted from a generated token's logit per occurrence so far (0 = off)")
      ->check(CLI::Range(-2.0, 2.0));
  app.add_option("--logit-bias", s->logit_bias,
                 "ID=BIAS[,ID=BIAS...]: add BIAS to token ID's logit (e.g. 13=-100 bans 13)");
}

}  // namespace inkling::cli
