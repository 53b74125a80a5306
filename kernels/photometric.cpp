// The tables of gpuaug::photometric's loops and of its backward's, filled by kernels/cpu and
// kernels/cuda.
#include "kernels/photometric.h"

namespace gpuaug {

Loops<PhotometricLoop> photometric_loops;
Loops<PhotometricBackwardLoop> photometric_backward_loops;

}  // namespace gpuaug
