// gpuaug::_resized_crop_windows's CPU loop; ops/resized_crop_windows.cpp checks, allocates and
// calls it.
#include <ATen/Parallel.h>

#include "kernels/resized_crop_windows.h"

namespace gpuaug::cpu {

GPUAUG_REGISTER_LOOP(resized_crop_windows_loops, cpu,
                     [](const at::Tensor&, const crop::Draw& draw) {
                       // a few hundred flops a sample: threads only for thousands of samples
                       at::parallel_for(0, draw.samples, 4096, [&](int64_t begin, int64_t end) {
                         for (int64_t n = begin; n < end; ++n) draw(n);
                       });
                     });

}  // namespace gpuaug::cpu
