// prepare_weight_tiles (model/weight_tiles.h).
#include "model/weight_tiles.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <tuple>
#include <vector>

#include "base/resident.h"
#include "ops/quant_q4_int8_gemm.h"

namespace inkling {

void prepare_weight_tiles(Weights& w, Numerics n, int threads) {
  for_each_matrix(
      w, [](const char*, const std::string&, MatView& v) { v.tiles = nullptr, v.tile_stride = 0; });
  w.tile_arena.reset();
  w.tile_bytes = 0;
  if (n != Numerics::kFast || !q4_int8_tiles_enabled()) return;

  struct Item {
    MatView* v;
    int64_t off;
    bool pack;  // the first view of its stored matrix packs, the others share its tiles
  };
  std::vector<Item> items;
  std::map<std::tuple<const uint8_t*, int64_t, int64_t, const uint8_t*>, int64_t> seen;
  int64_t total = 0;
  for_each_matrix(w, [&](const char* group, const std::string&, MatView& v) {
    if (std::strcmp(group, "embed") == 0) return;
    const int64_t bytes = q4_int8_tiles_bytes(v);
    if (bytes <= 0) return;
    const auto key = std::make_tuple(v.data, v.rows, v.row_stride, v.scales);
    if (auto it = seen.find(key); it != seen.end()) {
      items.push_back({&v, it->second, false});
      return;
    }
    seen.emplace(key, total);
    items.push_back({&v, total, true});
    total += bytes;
  });
  if (total == 0) return;
  const uint64_t avail = memory_available();
  constexpr uint64_t kHeadroom = uint64_t(1) << 30;
  if (avail > 0 && uint64_t(total) + kHeadroom > avail) {
    std::fprintf(stderr,
                 "[load] fast numerics: %.2f GB of 4-bit weight tiles do not fit in the %.2f GB "
                 "available; the kernels read the checkpoint as stored\n",
                 double(total) / 1e9, double(avail) / 1e9);
    return;
  }
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  uint8_t* arena = static_cast<uint8_t*>(::operator new[](size_t(total), std::align_val_t{64}));
  w.tile_arena = std::shared_ptr<uint8_t>(arena, AlignedDelete{});
  w.tile_bytes = uint64_t(total);

  int nt = threads > 0 ? threads : int(std::thread::hardware_concurrency());
  nt = std::clamp(nt, 1, 16);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < items.size();)
      if (items[i].pack) q4_int8_pack_tiles(*items[i].v, arena + items[i].off);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < nt; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const Item& it : items) {
    it.v->tiles = arena + it.off;
    it.v->tile_stride = q4_int8_tile_stride(*it.v);
  }
}

}  // namespace inkling
