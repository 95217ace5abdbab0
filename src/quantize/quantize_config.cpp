// output_config(): rewrites the source config for the output layout (mlx-vlm's for Inkling v1,
// the source's own for Inkling 2); every value the engine parsed is kept, only spellings change,
// so the quantized folder describes the same model.
#include "quantize/quantize_config.h"

namespace inkling::quant {

Result<std::string> output_config(const std::string& source_text, const ModelConfig& c,
                                  const nlohmann::ordered_json& quantization) {
  using nlohmann::ordered_json;
  ordered_json src = ordered_json::parse(source_text, nullptr, false);
  if (src.is_discarded() || !src.is_object())
    return Status::error("[quantize] config.json: not a JSON object");
  ordered_json top;
  if (c.family == Family::kInkling2) {
    // Inkling 2 keeps its config as found (transformers' spellings, which the output's tensor
    // names follow); only the quantization blocks are replaced.
    if (src.contains("text_config") && src["text_config"].is_object())
      for (const char* k : {"quantization", "quantization_config"}) src["text_config"].erase(k);
    src["quantization"] = quantization;
    src["quantization_config"] = quantization;
    return src.dump(2) + "\n";
  }
  if (src.contains("text_config") && src["text_config"].is_object()) {
    top = src;
  } else {
    // A bare transformers text config: the InklingConfig envelope mlx-vlm expects.
    top = {{"architectures", {"InklingForConditionalGeneration"}},
           {"model_type", "inkling_mm_model"}};
    for (const char* k : {"eos_token_id", "bos_token_id", "pad_token_id", "vocab_size"})
      if (src.contains(k)) top[k] = src[k];
    top["text_config"] = src;
  }
  ordered_json& tc = top["text_config"];
  // Original spelling of the two MLP widths and the conv kernel, whatever the source used.
  tc["intermediate_size"] = c.moe_width;
  tc["dense_intermediate_size"] = c.dense_width;
  tc.erase("moe_intermediate_size");
  tc["sconv_kernel_size"] = c.conv_k;
  if (tc.contains("conv_kernel_size")) tc["conv_kernel_size"] = c.conv_k;
  for (ordered_json* o : {&top, &tc}) {
    o->erase("quantization");
    o->erase("quantization_config");
  }
  top["quantization"] = quantization;
  top["quantization_config"] = quantization;
  return top.dump(2) + "\n";
}

}  // namespace inkling::quant
