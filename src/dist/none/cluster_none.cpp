// Cluster without MPI (INKLING_MPI=OFF): --expert-parallel explains how to get it.
#include "dist/cluster.h"

namespace inkling::dist {

bool Cluster::available() {
  return false;
}

Result<std::unique_ptr<Cluster>> Cluster::init(const ClusterOptions&) {
  return Status::error(
      "[expert-parallel] this inkling was built without MPI: install libopenmpi-dev and "
      "configure with -DINKLING_MPI=ON");
}

}  // namespace inkling::dist
