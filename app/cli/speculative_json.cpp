// speculative_json(): SpeculativeStats -> the JSON object generate and bench print.
#include "speculative_json.h"

namespace inkling::cli {

nlohmann::json speculative_json(const SpeculativeStats& st) {
  nlohmann::json acc = nlohmann::json::array();
  for (size_t i = 0; i < st.drafted.size(); ++i) acc.push_back(st.acceptance(i));
  return {{"draft", st.drafted.size()},
          {"rounds", st.rounds},
          {"tokens", st.tokens},
          {"tokens_per_round", st.tokens_per_round()},
          {"acceptance", acc},
          {"drafted", st.drafted},
          {"accepted", st.accepted},
          {"seconds",
           {{"draft", st.draft_seconds},
            {"verify", st.verify_seconds},
            {"accept", st.accept_seconds}}}};
}

}  // namespace inkling::cli
