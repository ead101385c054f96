// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/model/model_zoo.h"

#include "engine/common/error.h"

namespace rookery::model {

ModelSpec mlpSpec()
{
    ModelSpec spec;
    spec.name = "mlp";
    spec.input = Shape{{1, 28, 28}};
    spec.classes = 10;
    spec.layers = {
        {LayerKind::Flatten}, {LayerKind::Linear, 784, 512}, {LayerKind::ReLU}, {LayerKind::Linear, 512, 512},
        {LayerKind::ReLU},    {LayerKind::Linear, 512, 10},
    };
    return spec;
}

ModelSpec cnnSpec()
{
    ModelSpec spec;
    spec.name = "cnn";
    spec.input = Shape{{1, 28, 28}};
    spec.classes = 10;
    spec.layers = {
        {LayerKind::Conv2d, 1, 16, 3, 1, 1},
        {LayerKind::ReLU},
        {LayerKind::MaxPool2d, 0, 0, 2, 2, 0},
        {LayerKind::Conv2d, 16, 32, 3, 1, 1},
        {LayerKind::ReLU},
        {LayerKind::MaxPool2d, 0, 0, 2, 2, 0},
        {LayerKind::Flatten},
        {LayerKind::Linear, 32 * 7 * 7, 64},
        {LayerKind::ReLU},
        {LayerKind::Linear, 64, 10},
    };
    return spec;
}

std::vector<std::string> modelNames() { return {"mlp", "cnn"}; }

ModelSpec modelByName(const std::string &name)
{
    if (name == "mlp")
        return mlpSpec();
    if (name == "cnn")
        return cnnSpec();
    std::string known;
    for (const auto &n : modelNames())
        known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown model '" + name + "' (known models: " + known + ")");
}

} // namespace rookery::model
