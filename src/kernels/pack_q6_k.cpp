// q6_k has no packed layout yet: its matrices keep the file's row-major layout.
#include "kernels/packed.h"

namespace fulgur::kernels {

const PackFormat* pack_format_q6_k() { return nullptr; }

}  // namespace fulgur::kernels
