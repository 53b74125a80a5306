// Trains gpuaug's LLTM cell from C++ on a small synthetic sequence task: read 10 steps of 4 random
// features and predict the mean of the first feature over time. torch::optim::Adam updates the
// cell's weights and bias (plain tensors here) and a linear read-out. Prints the loss as it falls;
// returns 1 unless the last steps' loss is under half the first steps'.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <gpuaug/ops.h>

#include <cmath>
#include <iostream>

namespace {

constexpr int64_t kBatch = 32, kFeatures = 4, kState = 32, kTimeSteps = 10, kTrainSteps = 300;
constexpr int64_t kAveraged = 20;  // steps averaged at each end for the verdict

double train(torch::Device device) {
  torch::manual_seed(0);
  const auto opts = torch::TensorOptions().device(device);
  // gpuaug.nn.LLTM's initialisation: uniform in [-1/sqrt(S), 1/sqrt(S)].
  const double bound = 1.0 / std::sqrt(double(kState));
  auto weights = (torch::rand({3 * kState, kState + kFeatures}, opts) * 2 - 1).mul_(bound);
  auto bias = (torch::rand({3 * kState}, opts) * 2 - 1).mul_(bound);
  weights.requires_grad_(true);
  bias.requires_grad_(true);
  torch::nn::Linear readout(kState, 1);
  readout->to(device);

  std::vector<torch::Tensor> parameters = {weights, bias};
  for (const auto& p : readout->parameters()) parameters.push_back(p);
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(1e-2));

  double first = 0, last = 0;
  for (int64_t step = 0; step < kTrainSteps; ++step) {
    const auto sequence = torch::randn({kTimeSteps, kBatch, kFeatures}, opts);
    const auto target = sequence.select(2, 0).mean(0).unsqueeze(1);
    auto h = torch::zeros({kBatch, kState}, opts), cell = torch::zeros({kBatch, kState}, opts);
    for (int64_t t = 0; t < kTimeSteps; ++t) {
      std::tie(h, cell) = gpuaug::lltm(sequence[t], weights, bias, h, cell);
    }
    const auto loss = torch::mse_loss(readout->forward(h), target);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();

    const double value = loss.item<double>();
    if (step < kAveraged) first += value / kAveraged;
    if (step >= kTrainSteps - kAveraged) last += value / kAveraged;
    if (step % 50 == 0 || step == kTrainSteps - 1) {
      std::cout << "step " << step << " loss " << value << "\n";
    }
  }
  std::cout << "mean loss of the first " << kAveraged << " steps " << first << ", of the last "
            << kAveraged << " " << last << "\n";
  return last / first;
}

}  // namespace

int main() {
  try {
    const bool cuda = GPUAUG_EXAMPLE_WITH_CUDA && torch::cuda::is_available();
    const torch::Device device = cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    std::cout << "training an LLTM on " << device << "\n";
    const double ratio = train(device);
    if (ratio >= 0.5) {
      std::cout << "FAILED: the loss did not fall to half\n";
      return 1;
    }
    std::cout << "the loss fell to " << ratio << " of its start\n";
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
