// Tokenizer core: vocabulary validation (Impl::build), encoding (added-token split ->
// regex pre-tokenizer -> BPE), lossy decoding and the streaming decoder. Loading from files
// lives in loaders.cpp.
#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "inkling/tokenizer.h"
#include "text/tokenizer/bpe.h"
#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace inkling {
namespace tok {

void AddedMatcher::build(const std::vector<AddedToken>& tokens) {
  tokens_ = &tokens;
  for (auto& v : by_first_) v.clear();
  single_first_ = -1;
  for (uint32_t i = 0; i < tokens.size(); ++i) {
    const auto first = static_cast<unsigned char>(tokens[i].content[0]);
    by_first_[first].push_back(i);
    single_first_ = (i == 0 || single_first_ == first) ? first : -2;
  }
  if (single_first_ < 0) single_first_ = -1;
  for (auto& v : by_first_) {
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      return tokens[a].content.size() > tokens[b].content.size();
    });
  }
}

bool AddedMatcher::find(std::string_view text, size_t pos, size_t* begin, size_t* index) const {
  if (tokens_ == nullptr || tokens_->empty()) return false;
  const char* p = text.data();
  const size_t n = text.size();
  while (pos < n) {
    if (single_first_ >= 0) {
      const void* hit = std::memchr(p + pos, single_first_, n - pos);
      if (hit == nullptr) return false;
      pos = static_cast<const char*>(hit) - p;
    }
    for (uint32_t i : by_first_[static_cast<unsigned char>(p[pos])]) {
      const std::string& c = (*tokens_)[i].content;
      if (c.size() <= n - pos && std::memcmp(p + pos, c.data(), c.size()) == 0) {
        *begin = pos;
        *index = i;
        return true;
      }
    }
    ++pos;
  }
  return false;
}

namespace {

// HF's single_word / lstrip / rstrip helpers use Rust regex \w and \s (Unicode).
bool is_word_char(char32_t cp) {
  if (cp < 0x80) return std::isalnum(static_cast<int>(cp)) || cp == '_';
  static const pcre2_code* word = [] {
    int err = 0;
    PCRE2_SIZE off = 0;
    const char* pat = R"(^[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]$)";
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  }();
  if (word == nullptr) return false;
  std::string s;
  utf8::append_code_point(cp, &s);
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  const int rc =
      pcre2_match(word, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  return rc > 0;
}

bool is_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// Code point ending at byte `end` (valid UTF-8), and its start.
char32_t last_code_point(std::string_view s, size_t end, size_t* start) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  size_t len = 0;
  *start = b;
  return utf8::decode_at(s, b, &len);
}

}  // namespace
}  // namespace tok

Result<std::unique_ptr<Tokenizer::Impl>> Tokenizer::Impl::build(tok::VocabBuilder&& b) {
  auto fail = [&](const std::string& what) {
    return Status::error(fmt::format("[tokenizer] {}: {}", b.source, what));
  };
  auto impl = std::make_unique<Impl>();
  int32_t max_id = -1;
  for (size_t k = 0; k < b.ids.size(); ++k) {
    const int32_t id = b.ids[k];
    if (id < 0 || id >= kMaxId) return fail(fmt::format("token id {} out of range", id));
    if (b.spans[k].second == 0) return fail(fmt::format("token id {} is empty", id));
    max_id = std::max(max_id, id);
  }
  for (const AddedToken& t : b.added) {
    if (t.id < 0 || t.id >= kMaxId) {
      return fail(fmt::format("added token \"{}\": id {} out of range", t.content, t.id));
    }
    if (t.content.empty()) return fail(fmt::format("added token {} has empty content", t.id));
    if (!utf8::is_valid(t.content)) {
      return fail(fmt::format("added token {} is not valid UTF-8", t.id));
    }
    max_id = std::max(max_id, t.id);
  }
  impl->by_id.assign(static_cast<size_t>(max_id + 1), {0, kNoToken});
  impl->flags.assign(static_cast<size_t>(max_id + 1), 0);
  for (size_t k = 0; k < b.ids.size(); ++k) {
    auto& slot = impl->by_id[b.ids[k]];
    if (slot.second != kNoToken) {
      return fail(k < b.lines.size()
                      ? fmt::format("line {}: rank {} appears twice", b.lines[k], b.ids[k])
                      : fmt::format("token id {} appears twice", b.ids[k]));
    }
    slot = b.spans[k];
  }
  impl->arena = std::move(b.arena);
  for (const AddedToken& t : b.added) {
    auto& slot = impl->by_id[t.id];
    const auto off = static_cast<uint32_t>(impl->arena.size());
    if (slot.second != kNoToken) {
      // HF allows an added token that is also an ordinary token, if it is the same text.
      if ((impl->flags[t.id] & kAdded) ||
          std::string_view(impl->arena).substr(slot.first, slot.second) != t.content) {
        return fail(fmt::format("added token \"{}\": id {} is already taken", t.content, t.id));
      }
    } else {
      impl->arena.append(t.content);
      slot = {off, static_cast<uint32_t>(t.content.size())};
    }
    impl->flags[t.id] = kAdded | (t.special ? kSpecial : 0);
    if (!impl->added_ids.emplace(t.content, t.id).second) {
      return fail(fmt::format("added token \"{}\" appears twice", t.content));
    }
  }
  impl->ranks.build(impl->arena.data(), b.spans, b.ids);
  if (impl->ranks.size() != b.ids.size()) {
    // Name one duplicate.
    for (size_t k = 0; k < b.ids.size(); ++k) {
      const auto [off, len] = b.spans[k];
      const int32_t first = impl->ranks.find(impl->arena.data() + off, len);
      if (first != b.ids[k]) {
        return fail(fmt::format("{}tokens {} and {} have the same bytes",
                                k < b.lines.size() ? fmt::format("line {}: ", b.lines[k]) : "",
                                first, b.ids[k]));
      }
    }
  }
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    if (impl->ranks.find(&ch, 1) == tok::RankMap::kNone) {
      return fail(fmt::format("the single byte 0x{:02X} is not a token (not a byte-level BPE)", c));
    }
  }
  impl->added = std::move(b.added);
  impl->matcher.build(impl->added);
  auto pre = tok::Pretokenizer::build(b.pattern.empty() ? tok::kO200kPattern : b.pattern);
  if (!pre.ok()) return fail(pre.status().message());
  impl->pre = std::move(pre).value();
  return impl;
}

void Tokenizer::Impl::encode_ordinary(std::string_view text, std::vector<int32_t>* out) const {
  thread_local tok::BpeScratch scratch;
  pre->split(text, [&](std::string_view piece) { tok::bpe_encode(piece, ranks, &scratch, out); });
}

void Tokenizer::Impl::encode_valid(std::string_view text, bool allow_special,
                                   std::vector<int32_t>* out) const {
  size_t done = 0;    // text before this is encoded
  size_t search = 0;  // next position to look for an added token
  size_t begin = 0, index = 0;
  while (matcher.find(text, search, &begin, &index)) {
    const AddedToken& t = added[index];
    size_t start = begin;
    size_t stop = begin + t.content.size();
    search = stop;
    if (start < done) continue;  // swallowed by a previous token's rstrip
    if (t.special && !allow_special) continue;
    if (t.single_word) {
      size_t cs = 0;
      const bool word_before =
          start > 0 && tok::is_word_char(tok::last_code_point(text, start, &cs));
      size_t len = 0;
      const bool word_after =
          stop < text.size() && tok::is_word_char(utf8::decode_at(text, stop, &len));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      size_t cs = 0;
      while (start > done && tok::is_space(tok::last_code_point(text, start, &cs))) start = cs;
    }
    if (t.rstrip) {
      size_t len = 0;
      while (stop < text.size() && tok::is_space(utf8::decode_at(text, stop, &len))) stop += len;
    }
    if (done < start) encode_ordinary(text.substr(done, start - done), out);
    out->push_back(t.id);
    done = stop;
    search = std::max(search, stop);
  }
  if (done < text.size()) encode_ordinary(text.substr(done), out);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 4 + 4);
  if (utf8::is_valid(text)) {
    impl_->encode_valid(text, allow_special, &out);
  } else {
    std::string clean;
    utf8::append_lossy(text, &clean);
    impl_->encode_valid(clean, allow_special, &out);
  }
  return out;
}

Result<std::vector<int32_t>> Tokenizer::encode_checked(std::string_view text,
                                                       bool allow_special) const {
  const size_t bad = utf8::first_invalid(text);
  if (bad != text.size()) {
    return Status::error(
        fmt::format("[tokenizer] input is not valid UTF-8 (byte 0x{:02X} at "
                    "offset {})",
                    static_cast<unsigned char>(text[bad]), bad));
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 4 + 4);
  impl_->encode_valid(text, allow_special, &out);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    bytes.append(impl_->bytes_of(id));
  }
  if (utf8::is_valid(bytes)) return bytes;
  std::string out;
  utf8::append_lossy(bytes, &out);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  return std::string(impl_->bytes_of(id));
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = impl_->added_ids.find(std::string(token)); it != impl_->added_ids.end()) {
    return it->second;
  }
  const int32_t r = impl_->ranks.find(token);
  if (r == tok::RankMap::kNone) return std::nullopt;
  return r;
}

size_t Tokenizer::vocab_size() const {
  return impl_->by_id.size();
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->flags.size() &&
         (impl_->flags[id] & Impl::kSpecial);
}

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->flags.size() &&
         (impl_->flags[id] & Impl::kAdded);
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added;
}
const std::string& Tokenizer::pattern() const {
  return impl_->pre->pattern();
}

StreamDecoder::StreamDecoder(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special)
    : tok_(std::move(tokenizer)), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  if (skip_special_ && tok_->is_special(id)) return {};
  pending_ += tok_->token_bytes(id);
  const size_t keep = utf8::incomplete_tail(pending_);
  const std::string_view ready = std::string_view(pending_).substr(0, pending_.size() - keep);
  std::string out;
  if (utf8::is_valid(ready)) {
    out.assign(ready);
  } else {
    utf8::append_lossy(ready, &out);
  }
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  utf8::append_lossy(pending_, &out);
  pending_.clear();
  return out;
}

}  // namespace inkling
