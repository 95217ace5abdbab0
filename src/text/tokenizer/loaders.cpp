// Tokenizer loading: tiktoken ranks files (`<base64> <rank>` lines), Hugging Face
// tokenizer.json (byte-level BPE; GPT-2 byte<->unicode alphabet), and model folders (which file
// to use, where the added tokens come from). Every failure names the file and the entry.
#include <algorithm>
#include <charconv>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/mapped_file.h"
#include "inkling/tokenizer.h"
#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/utf8.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status file_error(const std::string& path, const std::string& what) {
  return Status::error(fmt::format("[tokenizer] {}: {}", path, what));
}

Result<std::string> read_file(const std::string& path) {
  auto text = read_text_file(path);  // names the path: no such file, a directory, a FIFO, ...
  if (!text.ok()) return Status::error("[tokenizer] " + text.status().message());
  return text;
}

// Strict standard base64 (with padding); false on any other character or bad length.
bool base64_decode(std::string_view in, std::string* out) {
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(a[i])] = static_cast<int8_t>(i);
    return t;
  }();
  out->clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return false;  // data after '='
      v[k] = table[static_cast<unsigned char>(c)];
      if (v[k] < 0) return false;
    }
    const uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out->push_back(static_cast<char>(w >> 16));
    if (pad < 2) out->push_back(static_cast<char>((w >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(w & 0xFF));
  }
  return true;
}

std::string clip(std::string_view s) {
  return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "...";
}

// GPT-2 bytes_to_unicode: byte b <-> code point; the inverse maps code points < 324 to bytes.
struct ByteLevelAlphabet {
  std::array<int16_t, 324> to_byte;
  ByteLevelAlphabet() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_byte[printable ? b : 256 + n++] = static_cast<int16_t>(b);
    }
  }
  // Byte-level string -> raw bytes; false if a character is outside the alphabet.
  bool decode(std::string_view s, std::string* out) const {
    out->clear();
    if (!utf8::is_valid(s)) return false;
    for (size_t i = 0; i < s.size();) {
      size_t len = 0;
      const char32_t cp = utf8::decode_at(s, i, &len);
      if (cp >= to_byte.size() || to_byte[cp] < 0) return false;
      out->push_back(static_cast<char>(to_byte[cp]));
      i += len;
    }
    return true;
  }
};

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet a;
  return a;
}

Status parse_tiktoken_ranks(const std::string& path, std::string_view text, tok::VocabBuilder* b) {
  std::string bytes;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    const size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) {
      return file_error(
          path, fmt::format("line {}: expected '<base64> <rank>', got '{}'", line_no, clip(line)));
    }
    const std::string_view tok = line.substr(0, sp);
    std::string_view rank = line.substr(sp);
    while (!rank.empty() && (rank.front() == ' ' || rank.front() == '\t')) rank.remove_prefix(1);
    if (!base64_decode(tok, &bytes)) {
      return file_error(path, fmt::format("line {}: invalid base64 '{}'", line_no, clip(tok)));
    }
    int64_t r = -1;
    const auto [end, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), r);
    if (ec != std::errc() || end != rank.data() + rank.size() || r < 0 ||
        r >= Tokenizer::Impl::kMaxId) {
      return file_error(path, fmt::format("line {}: rank '{}' is not an integer in [0, {})",
                                          line_no, clip(rank), Tokenizer::Impl::kMaxId));
    }
    b->add_ordinary(bytes, static_cast<int32_t>(r));
    b->lines.push_back(static_cast<uint32_t>(line_no));
  }
  if (b->ids.empty()) return file_error(path, "no ranks (empty file)");
  return Status::success();
}

// Removes ordinary entries whose id is an added token's (tokenizer.model lists the specials
// too); their bytes must be the token's text.
Status drop_added_from_ranks(const std::string& path, tok::VocabBuilder* b) {
  if (b->added.empty()) return Status::success();
  std::unordered_map<int32_t, const AddedToken*> by_id;
  for (const AddedToken& t : b->added) by_id[t.id] = &t;
  size_t w = 0;
  for (size_t k = 0; k < b->ids.size(); ++k) {
    auto it = by_id.find(b->ids[k]);
    if (it != by_id.end()) {
      const auto [off, len] = b->spans[k];
      if (std::string_view(b->arena).substr(off, len) != it->second->content) {
        return file_error(
            path, fmt::format("rank {} is '{}' in the ranks file but the added "
                              "token with that id is '{}'",
                              b->ids[k], clip(b->arena.substr(off, len)), it->second->content));
      }
      continue;
    }
    b->spans[w] = b->spans[k];
    b->ids[w] = b->ids[k];
    b->lines[w] = b->lines[k];
    ++w;
  }
  b->spans.resize(w);
  b->ids.resize(w);
  b->lines.resize(w);
  return Status::success();
}

// ---- JSON helpers: typed access that names the path on failure. ----

Result<const json*> member(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) return Status::error(fmt::format("{}: not an object", where));
  auto it = obj.find(key);
  if (it == obj.end()) return Status::error(fmt::format("{}.{}: missing", where, key));
  return &*it;
}

Result<json> parse_json(const std::string& path, const std::string& text) {
  if (Status s = check_json_depth(text, "not valid JSON"); !s) return file_error(path, s.message());
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return file_error(path, fmt::format("not valid JSON: {}", e.what()));
  }
}

bool flag(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

Result<AddedToken> parse_added_token(const json& j, const std::string& where, int64_t id) {
  if (!j.is_object()) return Status::error(fmt::format("{}: not an object", where));
  AddedToken t;
  if (id < 0) {
    auto idj = j.find("id");
    if (idj == j.end() || !idj->is_number_integer()) {
      return Status::error(fmt::format("{}.id: missing or not an integer", where));
    }
    id = idj->get<int64_t>();
  }
  if (id < 0 || id >= Tokenizer::Impl::kMaxId) {
    return Status::error(fmt::format("{}: id {} out of range", where, id));
  }
  t.id = static_cast<int32_t>(id);
  auto c = j.find("content");
  if (c == j.end() || !c->is_string()) {
    return Status::error(fmt::format("{}.content: missing or not a string", where));
  }
  t.content = c->get<std::string>();
  t.special = j.contains("special") ? flag(j, "special") : true;
  t.lstrip = flag(j, "lstrip");
  t.rstrip = flag(j, "rstrip");
  t.single_word = flag(j, "single_word");
  return t;
}

// pre_tokenizer must be Split(Regex, Isolated) followed by ByteLevel(use_regex=false); returns
// the regex.
Result<std::string> split_pattern(const json& root) {
  auto it = root.find("pre_tokenizer");
  const char* expected =
      "pre_tokenizer: expected Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)]";
  if (it == root.end() || !it->is_object()) return Status::error(expected);
  std::vector<const json*> steps;
  if (it->value("type", "") == "Sequence") {
    auto seq = it->find("pretokenizers");
    if (seq == it->end() || !seq->is_array()) return Status::error(expected);
    for (const json& s : *seq) steps.push_back(&s);
  } else {
    steps.push_back(&*it);
  }
  std::string pattern;
  bool byte_level = false;
  for (const json* s : steps) {
    if (!s->is_object()) return Status::error(expected);
    const std::string type = s->value("type", "");
    if (type == "Split" && pattern.empty() && !byte_level) {
      auto p = s->find("pattern");
      if (p == s->end() || !p->is_object() || !p->contains("Regex") || !(*p)["Regex"].is_string() ||
          s->value("behavior", "") != "Isolated" || flag(*s, "invert")) {
        return Status::error(fmt::format("{} (unsupported Split)", expected));
      }
      pattern = (*p)["Regex"].get<std::string>();
    } else if (type == "ByteLevel" && !byte_level) {
      if (flag(*s, "add_prefix_space") || !s->contains("use_regex") || flag(*s, "use_regex")) {
        return Status::error(
            fmt::format("{} (ByteLevel with add_prefix_space or use_regex)", expected));
      }
      byte_level = true;
    } else {
      return Status::error(fmt::format("{} (got '{}')", expected, type));
    }
  }
  if (pattern.empty() || !byte_level) return Status::error(expected);
  return pattern;
}

Status parse_hf_model(const json& root, tok::VocabBuilder* b) {
  INK_ASSIGN_OR_RETURN(const json* model, member(root, "model", "tokenizer"));
  if (model->value("type", "BPE") != "BPE") {
    return Status::error(
        fmt::format("model.type: '{}' is not supported (BPE only)", model->value("type", "")));
  }
  if (flag(*model, "byte_fallback")) return Status::error("model.byte_fallback: not supported");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model->find(k);
    if (it != model->end() && !it->is_null() &&
        !(it->is_string() && it->get<std::string>().empty())) {
      return Status::error(fmt::format("model.{}: not supported", k));
    }
  }
  INK_ASSIGN_OR_RETURN(const json* vocab, member(*model, "vocab", "model"));
  if (!vocab->is_object()) return Status::error("model.vocab: not an object");
  std::string bytes;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return Status::error(
          fmt::format("model.vocab[\"{}\"]: id is not an integer", clip(it.key())));
    }
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= Tokenizer::Impl::kMaxId) {
      return Status::error(
          fmt::format("model.vocab[\"{}\"]: id {} out of range", clip(it.key()), id));
    }
    if (!alphabet().decode(it.key(), &bytes)) {
      return Status::error(fmt::format(
          "model.vocab[\"{}\"]: not a byte-level token (character outside the GPT-2 byte "
          "alphabet)",
          clip(it.key())));
    }
    b->add_ordinary(bytes, static_cast<int32_t>(id));
  }
  if (b->ids.empty()) return Status::error("model.vocab: empty");
  return Status::success();
}

// Merges must be in vocabulary-rank order and produce every multi-byte token: then HF's
// merge-ranked BPE and tiktoken's rank-of-concatenation BPE agree, which is what we implement.
Status check_hf_merges(const json& root, const Tokenizer::Impl& impl) {
  const json& model = root["model"];
  INK_ASSIGN_OR_RETURN(const json* merges, member(model, "merges", "model"));
  if (!merges->is_array()) return Status::error("model.merges: not an array");
  std::vector<uint8_t> produced(impl.by_id.size(), 0);
  std::string a, c, both;
  int32_t prev = -1;
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    std::string_view left, right;
    std::string joined;
    if (m.is_string()) {
      joined = m.get<std::string>();
      const size_t sp = joined.find(' ');
      if (sp == std::string::npos || joined.find(' ', sp + 1) != std::string::npos) {
        return Status::error(
            fmt::format("model.merges[{}]: expected \"left right\", got \"{}\"", i, clip(joined)));
      }
      left = std::string_view(joined).substr(0, sp);
      right = std::string_view(joined).substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    } else {
      return Status::error(fmt::format("model.merges[{}]: not a string or a pair of strings", i));
    }
    if (!alphabet().decode(left, &a) || !alphabet().decode(right, &c) ||
        impl.ranks.find(a) == tok::RankMap::kNone || impl.ranks.find(c) == tok::RankMap::kNone) {
      return Status::error(
          fmt::format("model.merges[{}]: \"{} {}\" uses a token not in the "
                      "vocabulary",
                      i, clip(left), clip(right)));
    }
    both = a + c;
    const int32_t r = impl.ranks.find(both);
    if (r == tok::RankMap::kNone) {
      return Status::error(
          fmt::format("model.merges[{}]: the merged token \"{}{}\" is not in "
                      "the vocabulary",
                      i, clip(left), clip(right)));
    }
    if (r <= prev) {
      return Status::error(fmt::format(
          "model.merges[{}]: merges are not in vocabulary-rank order (token {} after {}); only "
          "tiktoken-style BPE vocabularies are supported",
          i, r, prev));
    }
    prev = r;
    produced[r] = 1;
  }
  for (size_t id = 0; id < impl.by_id.size(); ++id) {
    const auto [off, len] = impl.by_id[id];
    if (len == Tokenizer::Impl::kNoToken || len < 2 || (impl.flags[id] & Tokenizer::Impl::kAdded)) {
      continue;
    }
    if (!produced[id]) {
      return Status::error(
          fmt::format("model.merges: token {} is not produced by any merge; "
                      "only tiktoken-style BPE vocabularies are supported",
                      id));
    }
  }
  return Status::success();
}

Result<std::vector<AddedToken>> added_from_tokenizer_config(const std::string& path) {
  INK_ASSIGN_OR_RETURN(std::string text, read_file(path));
  INK_ASSIGN_OR_RETURN(json root, parse_json(path, text));
  std::vector<AddedToken> out;
  auto it = root.find("added_tokens_decoder");
  if (it == root.end()) return out;
  if (!it->is_object()) return file_error(path, "added_tokens_decoder: not an object");
  for (auto e = it->begin(); e != it->end(); ++e) {
    int64_t id = -1;
    const std::string& key = e.key();
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0) {
      return file_error(path,
                        fmt::format("added_tokens_decoder[\"{}\"]: key is not an id", clip(key)));
    }
    auto t = parse_added_token(e.value(), fmt::format("added_tokens_decoder[\"{}\"]", key), id);
    if (!t.ok()) return file_error(path, t.status().message());
    out.push_back(std::move(t).value());
  }
  return out;
}

// special_tokens.json (shared-data layout): {"special_tokens": [{id, content}], "pat_str"}.
Status added_from_special_tokens_json(const std::string& path, std::vector<AddedToken>* added,
                                      std::string* pattern) {
  INK_ASSIGN_OR_RETURN(std::string text, read_file(path));
  INK_ASSIGN_OR_RETURN(json root, parse_json(path, text));
  auto list = root.find("special_tokens");
  if (list == root.end() || !list->is_array()) {
    return file_error(path, "special_tokens: missing or not an array");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    auto t = parse_added_token((*list)[i], fmt::format("special_tokens[{}]", i), -1);
    if (!t.ok()) return file_error(path, t.status().message());
    added->push_back(std::move(t).value());
  }
  auto pat = root.find("pat_str");
  if (pat != root.end() && pat->is_string()) *pattern = pat->get<std::string>();
  return Status::success();
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> Tokenizer::load_tiktoken(const std::string& ranks_path,
                                                                  std::vector<AddedToken> specials,
                                                                  const std::string& pattern) {
  INK_ASSIGN_OR_RETURN(std::string text, read_file(ranks_path));
  tok::VocabBuilder b;
  b.source = ranks_path;
  b.pattern = pattern;
  b.added = std::move(specials);
  INK_RETURN_IF_ERROR(parse_tiktoken_ranks(ranks_path, text, &b));
  INK_RETURN_IF_ERROR(drop_added_from_ranks(ranks_path, &b));
  INK_ASSIGN_OR_RETURN(auto impl, Impl::build(std::move(b)));
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::load_hf_json(const std::string& path) {
  INK_ASSIGN_OR_RETURN(std::string text, read_file(path));
  INK_ASSIGN_OR_RETURN(json root, parse_json(path, text));
  text.clear();
  text.shrink_to_fit();
  auto with_path = [&](const Status& s) { return file_error(path, s.message()); };
  if (!root.is_object()) return file_error(path, "not a JSON object");
  tok::VocabBuilder b;
  b.source = path;
  if (auto n = root.find("normalizer"); n != root.end() && !n->is_null()) {
    return file_error(path, "normalizer: not supported (expected null)");
  }
  auto pattern = split_pattern(root);
  if (!pattern.ok()) return with_path(pattern.status());
  b.pattern = std::move(pattern).value();
  if (auto d = root.find("decoder");
      d != root.end() && !d->is_null() && d->value("type", "") != "ByteLevel") {
    return file_error(path, "decoder: expected ByteLevel");
  }
  if (Status s = parse_hf_model(root, &b); !s) return with_path(s);
  if (auto at = root.find("added_tokens"); at != root.end() && !at->is_null()) {
    if (!at->is_array()) return file_error(path, "added_tokens: not an array");
    for (size_t i = 0; i < at->size(); ++i) {
      auto t = parse_added_token((*at)[i], fmt::format("added_tokens[{}]", i), -1);
      if (!t.ok()) return with_path(t.status());
      b.added.push_back(std::move(t).value());
    }
  }
  INK_ASSIGN_OR_RETURN(auto impl, Impl::build(std::move(b)));
  if (Status s = check_hf_merges(root, *impl); !s) return with_path(s);
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::load(const std::string& model_dir) {
  std::error_code ec;
  const fs::path dir(model_dir);
  if (!fs::is_directory(dir, ec)) {
    return file_error(model_dir, fs::exists(dir, ec) ? "not a directory" : "no such directory");
  }
  if (fs::exists(dir / "tokenizer.json", ec))
    return load_hf_json((dir / "tokenizer.json").string());
  std::string ranks;
  if (fs::exists(dir / "tiktoken" / "tokenizer.model", ec)) {
    ranks = (dir / "tiktoken" / "tokenizer.model").string();
  } else {
    std::vector<std::string> found;
    for (const fs::path& d : {dir, dir / "tiktoken"}) {
      if (!fs::is_directory(d, ec)) continue;
      for (const auto& e : fs::directory_iterator(d, ec)) {
        if (e.path().extension() == ".tiktoken") found.push_back(e.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) {
      return file_error(model_dir,
                        "no tokenizer.json, tiktoken/tokenizer.model or *.tiktoken file");
    }
    ranks = found.front();
  }
  std::vector<AddedToken> added;
  std::string pattern;
  if (fs::exists(dir / "tokenizer_config.json", ec)) {
    INK_ASSIGN_OR_RETURN(added,
                         added_from_tokenizer_config((dir / "tokenizer_config.json").string()));
  }
  if (fs::exists(dir / "special_tokens.json", ec)) {
    std::vector<AddedToken> more;
    INK_RETURN_IF_ERROR(
        added_from_special_tokens_json((dir / "special_tokens.json").string(), &more, &pattern));
    if (added.empty()) added = std::move(more);
  }
  return load_tiktoken(ranks, std::move(added), pattern);
}

}  // namespace inkling
