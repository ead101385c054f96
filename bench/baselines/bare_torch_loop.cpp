// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/baselines/bare_torch_loop.h"

#include <chrono>

#include <torch/torch.h>

namespace rookery::bench {

using Clock = std::chrono::steady_clock;

// The plainest LibTorch training loop: Sequential, torch::optim::SGD, index_select.
double bareMlpSamplesPerSecond(const data::ImageDataset &d, int steps, int64_t batch, double lr, double momentum)
{
    torch::manual_seed(1);
    torch::nn::Sequential net(torch::nn::Flatten(), torch::nn::Linear(784, 512), torch::nn::ReLU(),
                              torch::nn::Linear(512, 512), torch::nn::ReLU(), torch::nn::Linear(512, 10));
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(lr).momentum(momentum));
    auto images = torch::from_blob(const_cast<uint8_t *>(d.pixels.data()), {d.count, 1, 28, 28}, torch::kUInt8)
                      .to(torch::kFloat32)
                      .div_(255.0f)
                      .sub_(d.mean)
                      .div_(d.stddev);
    auto labels = torch::from_blob(const_cast<uint8_t *>(d.labels.data()), {d.count}, torch::kUInt8).to(torch::kInt64);
    auto order = torch::randperm(d.count, torch::kInt64);
    const int warmup = 30;
    Clock::time_point start;
    for (int i = 0; i < steps + warmup; ++i) {
        if (i == warmup)
            start = Clock::now();
        const int64_t first = (int64_t(i) * batch) % (d.count - batch);
        auto idx = order.narrow(0, first, batch);
        auto x = images.index_select(0, idx);
        auto y = labels.index_select(0, idx);
        opt.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        loss.backward();
        opt.step();
        (void)loss.item<float>();
    }
    return double(steps) * double(batch) / std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace rookery::bench
