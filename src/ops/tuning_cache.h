// The decode tuning cache (ops/tuning.h): one JSON file per CPU model and thread count in the
// user's cache directory, written by `inkling tune` and read when an engine starts.
//
//   $XDG_CACHE_HOME/inkling/tune-<cpu model>-t<threads>.json   (else ~/.cache/inkling/...)
//   {"inkling_tune": 1, "cpu": "AMD EPYC ...", "threads": 2, "tuning": {"split_rows": 0, ...},
//    "measured": {...}}
//
// INKLING_TUNE selects what an engine loads: unset, empty or "on": that file if it exists, else
// the defaults; "off": the defaults; anything else: the path of a tuning file to load. A file that
// cannot be read or parsed, or names another CPU or thread count, gives one warning on stderr and
// the defaults: never an error.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ops/tuning.h"

namespace inkling {

struct TuningFile {
  DecodeTuning tuning = DecodeTuning::defaults();
  std::string cpu;
  int threads = 0;
  nlohmann::json measured;  // what `inkling tune` measured (informational)
};

// "tune-<cpu model, characters other than [A-Za-z0-9] as '-'>-t<threads>.json".
std::string tuning_cache_name(const std::string& cpu_model, int threads);
// The cache file for this CPU and `threads`, or "" when neither XDG_CACHE_HOME nor HOME is set.
std::string tuning_cache_path(int threads);

// The text of a tuning file. False with a message naming the field on any defect.
bool parse_tuning_text(const std::string& text, TuningFile* out, std::string* err);
// The same from a file; the message names the file. `missing` (if given) is set when the file
// does not exist.
bool read_tuning_file(const std::string& path, TuningFile* out, std::string* err,
                      bool* missing = nullptr);
// Writes (creating the directories, through a temporary file and a rename).
bool write_tuning_file(const std::string& path, const TuningFile& f, std::string* err);

// What an engine with `threads` workers runs with, from INKLING_TUNE and the cache (above); sets
// it (set_decode_tuning) and returns the source ("default", "cache <path>", "file <path>",
// "off"). Called by every Engine::create; loads again only when the thread count changes, and
// never overrides values a calibration set in this process. Warnings go to stderr once.
std::string load_decode_tuning(int threads);

}  // namespace inkling
