// The table of gpuaug::photometric's loops, filled by kernels/cpu and kernels/cuda.
#include "kernels/photometric.h"

namespace gpuaug {

Loops<PhotometricLoop> photometric_loops;

}  // namespace gpuaug
